# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""volfence.csi.storage_incidents: an ansible-rulebook event source of storage incidents."""

from __future__ import absolute_import, division, print_function

DOCUMENTATION = r"""
---
short_description: Storage incidents of a Kubernetes cluster, as events for ansible-rulebook
description:
  - Lists, then watches, the cluster's Nodes, node Leases, Pods, Pod Events, PersistentVolumeClaims,
    PersistentVolumes and VolumeAttachments (resuming from the last resourceVersion; listing again
    after a 410 Gone or a broken watch; failed attempts back off up to I(backoff_max) seconds).
  - Emits incident events, not objects, each once (an id derived from the objects, so a relist does
    not repeat one). C(event.incident) has C(id), C(kind), C(title), C(node), C(pods), C(claims),
    C(evidence) and C(next) (the volfence.csi playbook and extra vars that handle it).
  - C(node-lost) is a node not Ready whose Lease has not been renewed for I(node_lost_after) seconds,
    the rule node_failover's preflight refuses a live node with (docs/safety.md, I1).
    C(event.incident.failover.allowed) is false, with the reason, for a node with one of
    I(exclude_labels) (or NodeHealthCheck's remediation.medik8s.io/exclude-from-remediation), and
    once I(max_failovers) nodes were let through in the last I(failover_window) seconds.
  - C(stale-rbd-watcher), C(stale-volumeattachment), C(stale-rbd-lock), C(dead-fuse-mount) are the
    incidents of a pod stuck longer than I(stuck_after) seconds, as volfence.csi.diagnose classifies
    them from the pod's FailedMount and FailedAttachVolume events.
  - C(volumeattachment-detach-error) is a VolumeAttachment being deleted whose detach fails;
    C(node-back) is a node failed over by node_failover that is Ready with a new bootID.
  - Nothing is decided while the watch of a kind is broken and not listed again (a Lease not seen
    renewed is not a dead node).
  - Connects as kubernetes.core does; the K8S_AUTH_* environment variables fill what is not given.
    Needs the kubernetes Python library and the kubernetes.core collection where ansible-rulebook runs.
options:
  kubeconfig:
    description:
      - Path of a kubeconfig (or E(K8S_AUTH_KUBECONFIG); by default C(~/.kube/config) or in-cluster).
    type: path
    required: false
  context:
    description:
      - Its context (or E(K8S_AUTH_CONTEXT)).
    type: str
    required: false
  host:
    description:
      - API server URL (or E(K8S_AUTH_HOST)).
    type: str
    required: false
  api_key:
    description:
      - Bearer token (or E(K8S_AUTH_API_KEY)).
    type: str
    required: false
  username:
    description:
      - User name of basic authentication (or E(K8S_AUTH_USERNAME)).
    type: str
    required: false
  password:
    description:
      - Its password (or E(K8S_AUTH_PASSWORD)).
    type: str
    required: false
  validate_certs:
    description:
      - Verify the API server's certificate (or E(K8S_AUTH_VERIFY_SSL)).
    type: bool
    required: false
  ca_cert:
    description:
      - CA bundle of the API server (or E(K8S_AUTH_SSL_CA_CERT)).
    type: path
    required: false
  client_cert:
    description:
      - Client certificate (or E(K8S_AUTH_CERT_FILE)).
    type: path
    required: false
  client_key:
    description:
      - Client key (or E(K8S_AUTH_KEY_FILE)).
    type: path
    required: false
  proxy:
    description:
      - HTTP proxy URL (or E(K8S_AUTH_PROXY)).
    type: str
    required: false
  impersonate_user:
    description:
      - User to impersonate (or E(K8S_AUTH_IMPERSONATE_USER)).
    type: str
    required: false
  impersonate_groups:
    description:
      - Groups to impersonate (or E(K8S_AUTH_IMPERSONATE_GROUPS)).
    type: list
    elements: str
    required: false
  stuck_after:
    description:
      - Seconds a pod waits to start before it is an incident; also how long a VolumeAttachment's detach
        may fail.
      - From 0 to 86400.
    type: int
    required: false
    default: 60
  node_lost_after:
    description:
      - Seconds a not Ready node's Lease must be unrenewed before it is lost (use node_failover's
        C(lease_grace_seconds)).
      - From 0 to 86400.
    type: int
    required: false
    default: 120
  max_failovers:
    description:
      - Nodes let through to failover in O(failover_window) seconds; more are reported with
        C(failover.allowed=false). 0 lets none through.
      - From 0 to 10000.
    type: int
    required: false
    default: 1
  failover_window:
    description:
      - Seconds of the failover budget's window.
      - From 1 to 604800.
    type: int
    required: false
    default: 3600
  exclude_labels:
    description:
      - Label keys of nodes never let through to failover.
    type: list
    elements: str
    required: false
    default: [volfence.csi/no-auto-failover]
  interval:
    description:
      - Seconds between evaluations (time-based rules such as O(node_lost_after) need them).
      - Above 0, at most 86400.
    type: float
    required: false
    default: 1
  watch_timeout:
    description:
      - Seconds a watch request lasts before it is resumed.
      - Above 0, at most 86400.
    type: float
    required: false
    default: 300
  backoff_max:
    description:
      - Longest wait, in seconds, between attempts to list or watch again after a failure.
      - Above 0, at most 86400.
    type: float
    required: false
    default: 30
  request_timeout:
    description:
      - Seconds a list request may take.
      - Above 0, at most 86400.
    type: float
    required: false
    default: 30
notes:
  - Every option is checked before anything connects; a wrong one stops the source with one message
    naming each (ansible-rulebook shows it), not a traceback.
  - C(extensions/eda/schemas/storage_incidents.schema.json) in the collection is the JSON schema of
    these options, for editors and for checking a rulebook's source arguments before it is run.
  - When ansible-rulebook stops the source (cancellation), its watches are closed at once.
"""

EXAMPLES = r"""
- name: Storage incidents
  hosts: all
  sources:
    - volfence.csi.storage_incidents:
        kubeconfig: /etc/volfence/kubeconfig
        node_lost_after: 120
        max_failovers: 1
  rules:
    - name: Fail over a lost node
      condition: event.incident.kind == "node-lost" and event.incident.failover.allowed == true
      action:
        run_playbook:
          name: volfence.csi.node_failover
          extra_vars:
            failed_node: "{{ event.incident.node }}"
"""

import asyncio
import logging
import os
import sys
import threading
import time

LOG = logging.getLogger('volfence.csi.storage_incidents')


def _collection_imports():
    """The collection's module_utils. ansible-rulebook runs this file with runpy, outside Ansible's
    collection loader: the folder holding ansible_collections/ goes on sys.path when needed."""
    try:
        from ansible_collections.volfence.csi.plugins.module_utils._decisions import incidents
    except ImportError:
        # .../ansible_collections/volfence/csi/extensions/eda/plugins/event_source/storage_incidents.py
        root = os.path.abspath(__file__)
        for _level in range(8):
            root = os.path.dirname(root)
        if root not in sys.path:
            sys.path.append(root)
        from ansible_collections.volfence.csi.plugins.module_utils._decisions import incidents
    from ansible_collections.volfence.csi.plugins.module_utils._k8s import common, watch
    return incidents, common, watch


AUTH_OPTIONS = ('kubeconfig', 'context', 'host', 'api_key', 'validate_certs', 'ca_cert', 'client_cert',
                'client_key', 'proxy', 'username', 'password', 'impersonate_user', 'impersonate_groups')
# The seconds settings; the tracker's whole-number settings are bounded by incidents.SETTING_BOUNDS.
SECONDS_MAX = 86400
_TYPES = {'int': (int,), 'float': (int, float), 'bool': (bool,), 'str': (str,), 'path': (str,), 'list': (list,)}
_TYPE_WORDS = dict(int='a whole number', float='a number', bool='true or false', list='a list of strings')


def options():
    """{name: option} of DOCUMENTATION: the one place the options, their types and defaults are said."""
    import yaml  # ansible-rulebook's own dependency
    return yaml.safe_load(DOCUMENTATION)['options']


def _typed(name, value, option):
    """(value as its option's type, problem or None). A rulebook variable substituted into the source's
    args may come as text: '30' for an int or a float is taken."""
    kind = option.get('type', 'str')
    if isinstance(value, str) and kind in ('int', 'float'):
        try:
            value = int(value) if kind == 'int' else float(value)
        except ValueError:
            return value, '%s must be %s, not %r' % (name, 'a whole number' if kind == 'int' else 'a number', value)
    if kind == 'bool' and isinstance(value, str) and value.strip().lower() in ('true', 'false', 'yes', 'no'):
        value = value.strip().lower() in ('true', 'yes')
    if kind == 'list' and isinstance(value, str):
        value = [value]
    if isinstance(value, bool) and kind != 'bool' or not isinstance(value, _TYPES[kind]):
        return value, '%s must be %s, not %r' % (name, _TYPE_WORDS.get(kind, 'a string'), value)
    if kind == 'list' and not all(isinstance(item, str) and item for item in value):
        return value, '%s must be a list of strings, not %r' % (name, value)
    return value, None


def settings_of(args):
    """The source's settings from its args, with their defaults, and its connection options: every
    option checked against DOCUMENTATION (type, bounds), before anything connects. ValueError names
    every unknown or wrong one, in one message."""
    incidents = _collection_imports()[0]
    args = dict(args or {})
    args.pop('eda_internal', None)   # ansible-rulebook's own keys, when it passes them
    documented = options()
    problems = []
    unknown = sorted(k for k in args if k not in documented)
    if unknown:
        problems.append('unknown option(s) %s (options: %s)' % (', '.join(unknown), ', '.join(sorted(documented))))
    values = {}
    for name, option in documented.items():
        value = args.get(name, option.get('default'))
        if value is None:
            continue
        value, problem = _typed(name, value, option)
        if problem is None and option.get('type') == 'float' and not 0 < value <= SECONDS_MAX:
            problem = '%s must be a number of seconds above 0, at most %d, not %r' % (name, SECONDS_MAX, value)
        if problem is None and name in incidents.SETTING_BOUNDS:
            low, high = incidents.SETTING_BOUNDS[name]
            if not low <= value <= high:
                problem = '%s must be between %d and %d, not %d' % (name, low, high, value)
        if problem:
            problems.append(problem)
        else:
            values[name] = value
    if problems:
        raise ValueError('volfence.csi.storage_incidents: %s; nothing was started' % '; '.join(problems))
    settings = dict((k, v) for k, v in values.items() if k not in AUTH_OPTIONS)
    return settings, dict((k, v) for k, v in values.items() if k in AUTH_OPTIONS)


def options_schema():
    """The JSON schema of the source's arguments (extensions/eda/schemas/storage_incidents.schema.json is
    this, written out; a unit test keeps the two the same)."""
    incidents = _collection_imports()[0]
    json_types = dict(int='integer', float='number', bool='boolean', str='string', path='string', list='array')
    properties = {}
    for name, option in options().items():
        prop = dict(type=json_types[option.get('type', 'str')], description=' '.join(option['description']))
        if option.get('type') == 'list':
            prop['items'] = dict(type='string', minLength=1)
        if 'default' in option:
            prop['default'] = option['default']
        if option.get('type') == 'float':
            prop.update(exclusiveMinimum=0, maximum=SECONDS_MAX)
        if name in incidents.SETTING_BOUNDS:
            prop.update(minimum=incidents.SETTING_BOUNDS[name][0], maximum=incidents.SETTING_BOUNDS[name][1])
        properties[name] = prop
    return {'$schema': 'http://json-schema.org/draft-07/schema#', 'title': 'volfence.csi.storage_incidents',
            'type': 'object', 'additionalProperties': False, 'properties': properties}


async def main(queue, args):
    """Put {"incident": {...}} on `queue` for each new incident, until cancelled (it never returns): every
    option is checked before anything connects, and cancellation closes the watches."""
    incidents, common, watch = _collection_imports()
    settings, auth = settings_of(args)
    tracker = incidents.IncidentTracker(stuck_after=settings['stuck_after'], node_lost_after=settings['node_lost_after'],
                                        max_failovers=settings['max_failovers'],
                                        failover_window=settings['failover_window'],
                                        exclude_labels=settings['exclude_labels'])
    auth['request_timeout'] = max(1, int(settings['request_timeout']))
    loop = asyncio.get_running_loop()
    api = await loop.run_in_executor(None, common.connect_params, auth)
    updates = asyncio.Queue()
    stop = threading.Event()

    def deliver(kind, event_type, payload):
        if stop.is_set():
            return
        try:
            loop.call_soon_threadsafe(updates.put_nowait, (kind, event_type, payload))
        except RuntimeError:
            pass   # the loop closed while a watch thread was still delivering: the source is stopping

    watches = []
    for kind, (path, selector) in sorted(incidents.WATCHED.items()):
        watches.append(watch.ListWatch(api, kind, path, field_selector=selector,
                                       watch_timeout=settings['watch_timeout'], backoff_max=settings['backoff_max']))
    threads = watch.start_watches(watches, deliver, stop)
    try:
        while True:
            try:
                first = await asyncio.wait_for(updates.get(), timeout=settings['interval'])
            except asyncio.TimeoutError:
                first = None
            pending = [first] if first else []
            while not updates.empty():
                pending.append(updates.get_nowait())
            was_in_sync = tracker.in_sync()
            for kind, event_type, payload in pending:
                if event_type == 'BROKEN':
                    LOG.warning('the watch of %s broke (%s): listing it again; nothing is decided until then',
                                kind, payload)
                tracker.update(kind, event_type, payload)
            if tracker.in_sync() and not was_in_sync:
                LOG.info('in sync: watching %s', ', '.join(sorted(incidents.WATCHED)))
            for incident in tracker.incidents():
                LOG.info('incident %s', incident['id'])
                await queue.put(dict(incident=incident))
    finally:
        # stopped (ansible-rulebook cancels its sources): the open watches end now, not at their timeout
        stop.set()
        closed = api.close_streams()
        deadline = time.monotonic() + 5   # a thread in a list request ends with it (request_timeout)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        LOG.info('stopped: %d watch(es) closed, %d thread(s) still ending', closed,
                 sum(1 for thread in threads if thread.is_alive()))


if __name__ == '__main__':
    # A quick look without ansible-rulebook: print the incidents of the cluster KUBECONFIG names.
    class _Printer(object):
        async def put(self, event):
            print(event, flush=True)

    asyncio.run(main(_Printer(), dict(stuck_after=int(os.environ.get('STUCK_AFTER', '60')))))
