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
    description: Path of a kubeconfig (or K8S_AUTH_KUBECONFIG; by default ~/.kube/config or in-cluster).
  context:
    description: Its context (or K8S_AUTH_CONTEXT).
  host:
    description: API server URL (or K8S_AUTH_HOST).
  api_key:
    description: Bearer token (or K8S_AUTH_API_KEY).
  validate_certs:
    description: Verify the API server's certificate (or K8S_AUTH_VERIFY_SSL).
  ca_cert:
    description: CA bundle of the API server (or K8S_AUTH_SSL_CA_CERT).
  client_cert:
    description: Client certificate (or K8S_AUTH_CERT_FILE).
  client_key:
    description: Client key (or K8S_AUTH_KEY_FILE).
  stuck_after:
    description: Seconds a pod waits to start before it is an incident; also how long a
      VolumeAttachment's detach may fail.
    default: 60
  node_lost_after:
    description: Seconds a not Ready node's Lease must be unrenewed before it is lost (use node_failover's
      lease_grace_seconds).
    default: 120
  max_failovers:
    description: Nodes let through to failover in I(failover_window) seconds; more are reported with
      C(failover.allowed=false). 0 lets none through.
    default: 1
  failover_window:
    description: Seconds of the failover budget's window.
    default: 3600
  exclude_labels:
    description: Label keys of nodes never let through to failover.
    default: [volfence.csi/no-auto-failover]
  interval:
    description: Seconds between evaluations (time-based rules such as node_lost_after need them).
    default: 1
  watch_timeout:
    description: Seconds a watch request lasts before it is resumed.
    default: 300
  backoff_max:
    description: Longest wait, in seconds, between attempts to list or watch again after a failure.
    default: 30
  request_timeout:
    description: Seconds a list request may take.
    default: 30
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
SETTINGS = dict(stuck_after=60, node_lost_after=120, max_failovers=1, failover_window=3600,
                exclude_labels=['volfence.csi/no-auto-failover'], interval=1, watch_timeout=300, backoff_max=30,
                request_timeout=30)


def settings_of(args):
    """The source's settings from its args, with defaults; ValueError names every unknown or wrong one."""
    args = dict(args or {})
    args.pop('eda_internal', None)   # ansible-rulebook's own keys, when it passes them
    unknown = sorted(k for k in args if k not in SETTINGS and k not in AUTH_OPTIONS)
    if unknown:
        raise ValueError('volfence.csi.storage_incidents: unknown option(s) %s (options: %s)' % (
            ', '.join(unknown), ', '.join(sorted(list(SETTINGS) + list(AUTH_OPTIONS)))))
    settings = dict(SETTINGS)
    settings.update((k, v) for k, v in args.items() if k in SETTINGS)
    for name in ('interval', 'watch_timeout', 'backoff_max', 'request_timeout'):
        value = settings[name]
        if isinstance(value, str):   # a rulebook variable substituted into the source's args
            try:
                value = settings[name] = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 86400:
            raise ValueError('volfence.csi.storage_incidents: %s must be a number of seconds between 0 and 86400, '
                             'not %r' % (name, value))
    return settings, dict((k, v) for k, v in args.items() if k in AUTH_OPTIONS and v is not None)


async def main(queue, args):
    """Put {"incident": {...}} on `queue` for each new incident, until cancelled."""
    incidents, common, watch = _collection_imports()
    settings, auth = settings_of(args)
    tracker = incidents.IncidentTracker(stuck_after=settings['stuck_after'], node_lost_after=settings['node_lost_after'],
                                        max_failovers=settings['max_failovers'],
                                        failover_window=settings['failover_window'],
                                        exclude_labels=settings['exclude_labels'])
    auth['request_timeout'] = int(settings['request_timeout'])
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
    watch.start_watches(watches, deliver, stop)
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
        stop.set()


if __name__ == '__main__':
    # A quick look without ansible-rulebook: print the incidents of the cluster KUBECONFIG names.
    class _Printer(object):
        async def put(self, event):
            print(event, flush=True)

    asyncio.run(main(_Printer(), dict(stuck_after=int(os.environ.get('STUCK_AFTER', '60')))))
