# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: which pods to restart after a repair (FUSE recovery, rbd_lock_cleanup),
and which pods replace them."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import controller_of


def restart_plan(pods, affected_uids, *, restart_unowned=False):
    """Which pods to delete so that they mount again (FUSE recovery): those whose uid is among
    affected_uids (their mount was repaired) and that a controller recreates; a pod no controller
    owns would be gone for good, so it is only listed unless restart_unowned. `wait`: the
    restarted pods a controller recreates, those whose replacement to wait for."""
    affected = set(affected_uids or [])
    restart, unowned = [], []
    for pod in pods or []:
        meta = pod.get('metadata') or {}
        if meta.get('uid') not in affected:
            continue
        if controller_of(pod) is not None or restart_unowned:
            restart.append(pod)
        else:
            unowned.append(pod)
    return dict(affected=restart + unowned, restart=restart, unowned=unowned,
                wait=[pod for pod in restart if controller_of(pod) is not None])


def _owner_key(reference):
    # the API requires an owner's uid; a hand-written object without one is matched by kind and name
    return reference.get('uid') or (reference.get('kind'), reference.get('name'))


def running_replacements(pods, pod):
    """'namespace/name' of the pods among `pods` that replace `pod`: Running, owned by the same
    controller, not `pod` itself (another uid) and not being deleted. Empty for a pod no controller
    owns (nothing replaces it)."""
    controller = controller_of(pod)
    if controller is None:
        return []
    meta = pod.get('metadata') or {}
    out = []
    for other in pods or []:
        other_meta = (other or {}).get('metadata') or {}
        if (other_meta.get('uid') == meta.get('uid') or other_meta.get('deletionTimestamp')
                or other_meta.get('namespace') != meta.get('namespace')
                or ((other or {}).get('status') or {}).get('phase') != 'Running'):
            continue
        owners = [_owner_key(r) for r in other_meta.get('ownerReferences') or [] if isinstance(r, dict)]
        if _owner_key(controller) in owners:
            out.append('%s/%s' % (other_meta.get('namespace'), other_meta.get('name')))
    return sorted(out)


def stuck_pod_restart(pod, *, restart_pod=True, released=False):
    """Whether to delete a stuck pod so that it mounts again, and why: only when the run released
    something it waited on (released), the user did not turn restarts off (restart_pod), and a
    controller recreates it (deleting a pod nobody owns loses it). {restart, reason}."""
    if not restart_pod:
        return dict(restart=False, reason='restart_pod is false')
    if not released:
        return dict(restart=False, reason='nothing was released, so a restart would not help')
    if controller_of(pod) is None:
        return dict(restart=False, reason='no controller would recreate it')
    return dict(restart=True, reason='its controller recreates it')
