"""Run a volfence.csi playbook the way AWX / Automation Controller runs a job template.

AWX hands each job to ansible-runner with a private data directory of its own:

    <private data dir>/project/<wrapper>.yml   the project's playbook, here a wrapper that imports the
                                               collection's playbook (docs/awx.md, section 3)
    <private data dir>/inventory/hosts.yml     the job's inventory (here: a copy of the lab's)
    <private data dir>/artifacts/<ident>/      what the job leaves: job_events/, rc, status, stdout

and passes the survey answers as extra variables, typed as AWX types them: a string for a text or
multiple choice answer, an int for an integer one. The template's own extra variables (fixed per
template, not asked at launch) come on top, as YAML gives them.

A plain module (not conftest) so the test files import it by name."""

import json
import os
import re
import shutil

import ansible_runner

from labtools import REPO, ansible_env, python_starters_env

SURVEYS = os.path.join(REPO, "docs", "surveys")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def survey_answers(playbook, **answers):
    """The extra variables a launch with this survey's `answers` passes: every question of the
    playbook's generated survey (docs/surveys/<playbook>.json), answered or left at its default,
    typed as AWX types it. An answer to a question the survey does not ask is a test error."""
    with open(os.path.join(SURVEYS, playbook + ".json")) as handle:
        spec = json.load(handle)["spec"]
    asked = dict((q["variable"], q) for q in spec)
    unknown = sorted(set(answers) - set(asked))
    assert not unknown, "the %s survey does not ask %s (it asks %s)" % (playbook, unknown, sorted(asked))
    extravars = {}
    for name, question in asked.items():
        value = answers.get(name, question.get("default", ""))
        if question["type"] in ("integer",):
            extravars[name] = int(value)
        elif question["type"] in ("text", "textarea", "multiplechoice", "password"):
            assert isinstance(value, str), "%s: a %s answer is a string, not %r" % (name, question["type"], value)
            if question["type"] == "multiplechoice":
                assert value in question["choices"], "%s: %r is not one of %s" % (name, value, question["choices"])
            extravars[name] = value
        else:
            raise AssertionError("%s: survey type %s is not handled here" % (name, question["type"]))
    return extravars


class Job(object):
    """One finished job: its rc, status, events, stdout, and what a workflow reads of it."""

    def __init__(self, runner, private_data_dir):
        self.runner = runner
        self.private_data_dir = private_data_dir
        self.project_dir = os.path.join(private_data_dir, "project")
        self.rc = runner.rc
        self.status = runner.status
        self.events = list(runner.events)
        with open(runner.stdout.name) as handle:
            self.stdout = ANSI.sub("", handle.read())
        stats = [e for e in self.events if e["event"] == "playbook_on_stats"]
        assert len(stats) == 1, "expected one playbook_on_stats event, got %d\n%s" % (len(stats), self.stdout[-3000:])
        self.stats = stats[0]["event_data"]

    @property
    def artifacts(self):
        """What set_stats left for the next node of a workflow (the job's `artifacts`)."""
        return self.stats.get("artifact_data") or {}

    def changed(self):
        """Hosts that reported a change, with their count (empty: changed=0 everywhere)."""
        return dict((host, count) for host, count in (self.stats.get("changed") or {}).items() if count)

    def failed_hosts(self):
        return sorted(set(self.stats.get("failures") or {}) | set(self.stats.get("dark") or {}))

    def task_results(self, task):
        """The results (event_data.res) of every host's ok/failed event of `task`, by host."""
        return dict((e["event_data"]["host"], e["event_data"].get("res", {})) for e in self.events
                    if e["event"] in ("runner_on_ok", "runner_on_failed")
                    and e["event_data"].get("task") == task)

    def changed_tasks(self):
        """(host, task) of every result that reported a change: what to look at when changed > 0."""
        return [(e["event_data"]["host"], e["event_data"].get("task")) for e in self.events
                if e["event"] in ("runner_on_ok", "runner_item_on_ok")
                and (e["event_data"].get("res") or {}).get("changed")]

    def tail(self, chars=4000):
        return self.stdout[-chars:]


def project(private_data_dir, playbook):
    """A project as an AWX project would hold it: a wrapper playbook importing the collection's."""
    os.makedirs(os.path.join(private_data_dir, "project"), exist_ok=True)
    wrapper = os.path.join(private_data_dir, "project", playbook + ".yml")
    with open(wrapper, "w") as handle:
        handle.write("---\n- name: %s (volfence.csi)\n  ansible.builtin.import_playbook: volfence.csi.%s\n"
                     % (playbook, playbook))
    return os.path.basename(wrapper)


def launch(private_data_dir, inventory, playbook, extravars, job_type="run", timeout=900):
    """Launch one job: a fresh private data directory, the inventory copied in, the wrapper playbook,
    the extra variables; ansible-runner runs ansible-playbook (the venv's: first on PATH, as the
    EE's is in AWX) in project/, its working directory."""
    if os.path.exists(private_data_dir):
        shutil.rmtree(private_data_dir)
    os.makedirs(os.path.join(private_data_dir, "inventory"))
    shutil.copy(inventory, os.path.join(private_data_dir, "inventory", "hosts.yml"))
    wrapper = project(private_data_dir, playbook)
    # What an execution environment has: the collection (and kubernetes.core) on its collections
    # path, ansible-playbook on PATH. Nothing else of this checkout (not its ansible.cfg, not the
    # json stdout callback the other tests use): ansible-runner sets its own event callback.
    base = ansible_env()
    envvars = {"ANSIBLE_COLLECTIONS_PATH": base["ANSIBLE_COLLECTIONS_PATH"], "PATH": base["PATH"],
               "ANSIBLE_HOST_KEY_CHECKING": "False"}
    envvars.update(python_starters_env())   # the modules' Python start-up paid once (docs/lab.md), as elsewhere
    cmdline = "--check" if job_type == "check" else None
    runner = ansible_runner.run(
        private_data_dir=private_data_dir, playbook=wrapper, extravars=extravars, envvars=envvars,
        cmdline=cmdline, timeout=timeout,
        quiet=True)
    return Job(runner, private_data_dir)
