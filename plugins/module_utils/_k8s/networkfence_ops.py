# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: NetworkFence operations on top of a KubeApi.

Reads everything first (one LIST of fences, classes, nodes and CSIAddonsNodes), plans every
fence with ``_networkfence`` and refuses the whole call before any write if one fence is
invalid or unsafe. Then writes only what differs, in parallel (threads over one connection
pool), each write with optimistic concurrency (resourceVersion) and a re-read on conflicts,
server errors and lost answers. Then waits, with one LIST per poll, for the controller's
``status.result``. A second identical run reads and writes nothing.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._clock import SYSTEM_CLOCK
from ansible_collections.volfence.csi.plugins.module_utils._k8s.common import (
    K8sApiError,
    K8sError,
    K8sNotInstalled,
    K8sRefused,
    resource_path,
)
from ansible_collections.volfence.csi.plugins.module_utils._k8s.ops import (
    read_named,
    wait_until_settled,
    write_with_reread,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.networkfence import (
    ADDONS_NODES,
    CLASSES,
    CREATE,
    DELETE,
    FAILED,
    FENCES,
    GROUP,
    NONE,
    SUCCEEDED,
    UNFENCE_DELETE,
    UNFENCED,
    UPDATE,
    VERSION,
    NodeIndex,
    addons_node_report,
    build_requests,
    class_report,
    DEFAULT_MONITOR_CONFIGMAPS,
    coverage_refusals,
    csi_monitors,
    fence_driver,
    fence_outcome,
    fence_report,
    monitor_refusals,
    plan_fence,
    plan_requests,
    plan_warnings,
    refused_unless_forced,
    MONITOR_REFUSAL,
    READY_NODE_REFUSAL,
    same_cidrs,
    unchecked_monitors,
    unread_monitors,
)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.node_fences import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    SET_LABEL,
    plan as node_fences_plan,
)
from ansible_collections.volfence.csi.plugins.module_utils._parallel import run_parallel

KIND = 'NetworkFence'


def fence_path(name=None):
    return resource_path(GROUP, VERSION, FENCES, name)


class NetworkFences(object):
    def __init__(self, api, *, workers=16, clock=SYSTEM_CLOCK, monitor_configmaps=DEFAULT_MONITOR_CONFIGMAPS):
        self.api = api
        self.monitor_configmaps = list(monitor_configmaps or [])
        # What the Ceph monitor check read and checked: returned as `monitors`.
        self.monitors = dict(configmaps=[], checked=[], unchecked=[], unread=None, sources=list(self.monitor_configmaps))
        self.workers = workers
        self.clock = clock
        self.warnings = []
        self.classes = {}
        self.classes_served = None
        self.index = None
        self.listed_fences = None   # every fence, when one LIST read them all in this call

    # -- reading
    def ensure_installed(self):
        if not self.api.served(GROUP, VERSION, FENCES):
            raise K8sNotInstalled(
                'The cluster does not serve %s/%s %s: the CSI-Addons NetworkFence CRD '
                '(networkfences.%s) is not installed. Install CSI-Addons (CRDs and controller) first; '
                'nothing was changed.' % (GROUP, VERSION, FENCES, GROUP),
                status=404, obj=dict(kind='CustomResourceDefinition', name='networkfences.' + GROUP))

    def read_fences(self, names=None):
        """{name: fence}: GETs for a few names, else one LIST (the LIST of node_fences_requests, when this call
        made one: the plan reads what the node_fences plan was made from)."""
        if self.listed_fences is not None:
            fences = dict((f['metadata']['name'], f) for f in self.listed_fences)
            self.listed_fences = None   # once: polls after writes read afresh
            return fences if names is None else dict((n, fences[n]) for n in names if n in fences)
        if names is not None:
            return read_named(self.api, fence_path, KIND, names)
        return dict((f['metadata']['name'], f) for f in self.api.list(fence_path(), what=(KIND, None)))

    def read_classes(self):
        if self.classes_served is None:
            self.classes_served = self.api.served(GROUP, VERSION, CLASSES)
            if self.classes_served:
                self.classes = dict((c['metadata']['name'], c) for c in self.api.list(
                    resource_path(GROUP, VERSION, CLASSES), what=('NetworkFenceClass', None)))
        return self.classes

    def read_nodes(self):
        if self.index is None:
            self.index = NodeIndex(self.api.list(resource_path('', 'v1', 'nodes'), what=('Node', None)))
        return self.index

    def node_fences_requests(self, params, check_mode=False):
        """The requests of a node_fences call (one Unfenced fence per node, see _decisions/node_fences.plan) and what
        the plan says besides (nodes, fenced, kept_fenced, pruned, nodes_without_addresses, warnings,
        installed). One LIST of the fences and one of the nodes (plus one with the node selector), which the
        plan and the checks of plan() then use. Raises K8sNotInstalled without the CSI-Addons CRDs (in check
        mode: installed=false and no requests, as a site playbook whose csi_addons run only pretended to
        install them), K8sRefused when a fence of another owner has the name of one of this set."""
        opts = params['node_fences']
        if not self.api.served(GROUP, VERSION, FENCES):
            if check_mode:
                return [], dict(installed=False, nodes=0, fenced=[], kept_fenced=[], pruned=[],
                                nodes_without_addresses=[], warnings=[])
            raise K8sNotInstalled(
                'The cluster does not serve %s/%s NetworkFence objects: the CSI-Addons CRDs are not installed. '
                'Install CSI-Addons first (role volfence.csi.csi_addons); nothing was changed.' % (GROUP, VERSION),
                status=404, obj=dict(kind='CustomResourceDefinition', name='networkfences.' + GROUP))
        fences = self.api.list(fence_path(), what=(KIND, None))
        present = opts['state'] == 'present'
        all_nodes = self.api.list(resource_path('', 'v1', 'nodes'), what=('Node', None)) if present else []
        self.index = NodeIndex(all_nodes) if present else None
        nodes = all_nodes
        if present and opts['node_selector']:
            nodes = self.api.list(resource_path('', 'v1', 'nodes'), what=('Node', None),
                                  label_selector=opts['node_selector'])
        planned = node_fences_plan(
            nodes, fences, all_nodes=all_nodes if present else None, state=opts['state'],
            node_selector=opts['node_selector'], address_types=opts['address_types'],
            extra_cidrs=opts['extra_cidrs'], name_prefix=opts['name_prefix'], fence_set=opts['set'],
            labels=opts['labels'], prune=opts['prune'], prune_fenced=opts['prune_fenced'])
        if planned['conflicts']:
            raise K8sRefused(
                'NetworkFence(s) %s already exist without the labels of this set (%s=%s, %s=%s): not taking them '
                'over. Use another name prefix, or label or delete them; nothing was changed.' % (
                    ', '.join(planned['conflicts']), MANAGED_BY_LABEL, MANAGED_BY, SET_LABEL, opts['set']),
                obj=dict(kind=KIND, name=planned['conflicts'][0]))
        self.listed_fences = fences
        requests = []
        if planned['entries']:
            # The shape of the fences comes from the call; state, fence state and labels from the plan only.
            shape = dict((key, params.get(key)) for key in ('network_fence_class', 'driver', 'secret', 'parameters'))
            requests = build_requests(dict(shape, state='present', fences=planned['entries']))
        report = dict((key, planned[key]) for key in ('nodes', 'fenced', 'kept_fenced', 'pruned',
                                                      'nodes_without_addresses', 'warnings'))
        report['installed'] = True
        return requests, report

    def addons_nodes(self):
        """(served, [reports]) of the CSIAddonsNode objects in every namespace."""
        if not self.api.served(GROUP, VERSION, ADDONS_NODES):
            return False, []
        return True, [addons_node_report(o) for o in self.api.list(resource_path(GROUP, VERSION, ADDONS_NODES),
                                                                   what=('CSIAddonsNode', None))]

    def read_monitor_configmaps(self):
        """(ConfigMaps, problems): the ceph-csi ConfigMaps named by monitor_configmaps ('namespace/name' is that
        one, a bare name is that name in every namespace: one LIST with a field selector), and a sentence for
        each source that could not be read (RBAC). A ConfigMap that does not exist is no problem here."""
        found, problems = [], []
        for source in self.monitor_configmaps:
            try:
                if '/' in source:
                    namespace, name = source.split('/', 1)
                    obj = self.api.get(resource_path('', 'v1', 'configmaps', name, namespace=namespace),
                                       what=('ConfigMap', name, namespace), missing_ok=True)
                    items = [obj] if obj is not None else []
                else:
                    items = self.api.list(resource_path('', 'v1', 'configmaps'), what=('ConfigMap', source),
                                          field_selector='metadata.name=%s' % source)
            except K8sApiError as exc:
                if exc.status == 404:
                    continue
                problems.append('could not read the ceph-csi ConfigMap(s) %s: %s' % (source, exc.msg))
                continue
            for obj in items:
                meta = obj.get('metadata') or {}
                key = (meta.get('namespace'), meta.get('name'))
                if key not in [((o.get('metadata') or {}).get('namespace'), (o.get('metadata') or {}).get('name'))
                               for o in found]:
                    found.append(obj)
        return found, problems

    def check_monitors(self, plans):
        """Refusal messages for plans that newly fence a Ceph monitor listed in ceph-csi's
        configuration, or write its address into a fence in any state; fills self.monitors (what was
        read and checked) and warns about host names."""
        fencing = [p for p in plans if p.monitor_checked]
        if not fencing or not self.monitor_configmaps:
            return []
        configmaps, unreadable = self.read_monitor_configmaps()
        monitors, unparsable = csi_monitors(configmaps)
        self.monitors['unread'] = unread_monitors(self.monitor_configmaps, configmaps, unreadable + unparsable, monitors)
        self.monitors['configmaps'] = ['%s/%s' % ((c.get('metadata') or {}).get('namespace'),
                                                  (c.get('metadata') or {}).get('name')) for c in configmaps]
        self.monitors['checked'] = [m for m in monitors if m['addresses']]
        self.monitors['unchecked'] = unchecked_monitors(monitors)
        if self.monitors['unchecked']:
            self.warnings.append('Ceph monitor(s) listed by host name cannot be checked against the fence CIDRs (no '
                                 'DNS look-up is done): %s; make sure the CIDRs do not hold them'
                                 % ', '.join(self.monitors['unchecked']))
        refusals = monitor_refusals(fencing, monitors)
        if self.monitors['unread']:
            refusals.append('the Ceph monitors could not be checked against %s: %s'
                            % (', '.join(p.name for p in fencing), self.monitors['unread']))
        return refusals

    def report(self, fence):
        return fence_report(fence, self.classes, self.index)

    def class_reports(self):
        return [class_report(c) for _n, c in sorted(self.classes.items())]

    # -- planning
    def plan(self, requests, force=False):
        """Plans for every request; K8sRefused (listing every problem) if one cannot be done."""
        self.ensure_installed()
        existing = self.read_fences([r['name'] for r in requests])
        needs_classes = any(r.get('network_fence_class') for r in requests) or any(
            (f.get('spec') or {}).get('networkFenceClassName') for f in existing.values())
        if needs_classes:
            self.read_classes()
        # the decisions are _decisions/networkfence.py's; this reads what they need and raises their refusal
        plans, problems = plan_requests(requests, existing, classes=self.classes, classes_served=self.classes_served,
                                        force=force)
        index = self.read_nodes()
        refused, forced = refused_unless_forced(coverage_refusals(plans, index), consequence=READY_NODE_REFUSAL,
                                                force=force)
        problems.extend(refused)
        self.warnings.extend(forced)
        refused, forced = refused_unless_forced(self.check_monitors(plans), consequence=MONITOR_REFUSAL, force=force)
        problems.extend(refused)
        self.warnings.extend(forced)
        if problems:
            raise K8sRefused('; '.join(problems) + '. Nothing was changed.')
        self.warnings.extend(plan_warnings(plans, index))
        self._check_addons_nodes([p for p in plans if p.writes])
        return plans

    def _check_addons_nodes(self, plans):
        if not plans:
            return
        drivers = set()
        for plan in plans:
            fence = plan.body if plan.action == CREATE else plan.existing
            driver = fence_driver(fence, self.classes)
            if driver:
                drivers.add(driver)
        if not drivers:
            return
        served, nodes = self.addons_nodes()
        if not served:
            self.warnings.append('The cluster does not serve CSIAddonsNode objects: CSI-Addons does not seem to be '
                                 'installed, so nothing may act on these fences')
            return
        for driver in sorted(drivers):
            connected = [n for n in nodes if n['driver'] == driver and n['state'] == 'Connected']
            if not connected:
                self.warnings.append('No CSIAddonsNode of driver %s is Connected (%d known): nothing would act on '
                                     'its fences until its CSI-Addons sidecar connects' % (
                                         driver, len([n for n in nodes if n['driver'] == driver])))

    # -- carrying out
    def run(self, plans, wait=True, wait_timeout=120, wait_sleep=2.0):
        """Carry out the plans. Returns the failures [(name, K8sError)]; every plan records what
        happened to it (changed, obj, outcome, error, gone)."""
        failures = []
        todo = [p for p in plans if p.action in (CREATE, UPDATE, UNFENCE_DELETE)]
        self._parallel(todo, lambda p: self._write(p, reset_status=wait or p.action == UNFENCE_DELETE), failures)
        if wait or any(p.action == UNFENCE_DELETE for p in todo):
            # An unfence must have succeeded before the fence is deleted, even with wait=false.
            waiting = [p for p in todo if p.error is None and (wait or p.action == UNFENCE_DELETE)]
            self._wait_outcomes(waiting, wait_timeout, wait_sleep, failures)
        deletes = [p for p in plans if p.error is None and (
            p.action == DELETE or (p.action == UNFENCE_DELETE and p.outcome == SUCCEEDED))]
        self._parallel(deletes, self._delete, failures)
        if wait:
            self._wait_gone([p for p in plans if p.action in (DELETE, UNFENCE_DELETE) and p.error is None]
                            + [p for p in plans if p.action == NONE and p.req['state'] == 'absent'
                               and p.existing is not None],
                            wait_timeout, wait_sleep, failures)
        return failures

    def _parallel(self, plans, func, failures):
        for plan, _value, exc in run_parallel(func, plans, self.workers, errors=(K8sError,)):
            if exc is not None:
                _fail(plan, exc, failures)

    def _write(self, plan, reset_status):
        name = plan.name
        path = fence_path(name)
        if plan.action == CREATE:
            def create():
                plan.obj = self.api.create(fence_path(), plan.body, what=(KIND, name))
                plan.changed = True

            def reread_create():
                fresh = self.api.get(path, what=(KIND, name), missing_ok=True)
                if fresh is None:
                    return None
                spec = fresh.get('spec') or {}
                want = plan.body['spec']
                if (spec.get('fenceState') == want['fenceState'] and same_cidrs(spec.get('cidrs'), want['cidrs'])
                        and spec.get('networkFenceClassName') == want.get('networkFenceClassName')
                        and spec.get('driver') == want.get('driver')):
                    plan.obj = fresh
                    plan.changed = True   # our create went through before its answer was lost
                    return True
                raise K8sRefused('NetworkFence %s appeared meanwhile with another spec (%s); not overwritten'
                                 % (name, spec), obj=dict(kind=KIND, name=name))
            write_with_reread(create, reread_create, self.api.retries, self.clock.sleep)
            return

        state = dict(current=plan.existing, reset=False)
        if reset_status and (plan.patch or {}).get('spec'):
            # The upstream status has no observedGeneration: clear the previous answer, so that
            # waiting sees the controller's answer to this change (it reconciles on spec changes
            # only, so clearing alone triggers nothing).
            try:
                state['current'] = self.api.merge_patch(path, dict(status=dict(result=None, message=None)),
                                                        what=(KIND, name), subresource='status')
                state['reset'] = True
            except K8sApiError as exc:
                if exc.status not in (403, 404, 405, 422):
                    raise
                self.warnings.append('NetworkFence %s: cannot clear the previous status (%s); waiting may accept the '
                                     'previous result' % (name, exc.msg))

        def update():
            patch = dict(plan.patch)
            patch['metadata'] = dict(plan.patch.get('metadata') or {},
                                     resourceVersion=state['current']['metadata']['resourceVersion'])
            plan.obj = self.api.merge_patch(path, patch, what=(KIND, name))
            plan.changed = True

        def reread_update():
            fresh = self.api.get(path, what=(KIND, name), missing_ok=True)
            if fresh is None:
                raise K8sRefused('NetworkFence %s was deleted meanwhile; not re-created' % name,
                                 obj=dict(kind=KIND, name=name))
            state['current'] = fresh
            replan = plan_fence(plan.req if plan.action == UPDATE else dict(plan.req, state='present',
                                                                            fence_state=UNFENCED), fresh)
            if replan.action == NONE:
                plan.obj = fresh
                plan.changed = True   # most likely our write, whose answer was lost
                return True
            plan.patch = replan.patch
            return None
        try:
            write_with_reread(update, reread_update, self.api.retries, self.clock.sleep)
        except K8sError as exc:
            if state['reset'] and not plan.changed:
                exc.msg += ('; the spec was not changed, but status.result/message had already been cleared (the '
                            'controller sets them again at the next spec change)')
            raise

    def _delete(self, plan):
        name = plan.name
        path = fence_path(name)
        uid = (plan.obj or plan.existing)['metadata']['uid']

        def delete():
            answer = self.api.delete(path, what=(KIND, name), body=dict(
                apiVersion='v1', kind='DeleteOptions', preconditions=dict(uid=uid)))
            plan.changed = True
            if answer is None or not (answer.get('metadata') or {}).get('deletionTimestamp'):
                plan.gone = True
            else:
                plan.obj = answer

        def reread():
            fresh = self.api.get(path, what=(KIND, name), missing_ok=True)
            if fresh is None or fresh['metadata'].get('uid') != uid:
                plan.gone = True
                plan.changed = True
                return True
            if fresh['metadata'].get('deletionTimestamp'):
                plan.obj = fresh
                plan.changed = True
                return True
            return None
        write_with_reread(delete, reread, self.api.retries, self.clock.sleep)

    def _poll_round(self, settle, failures):
        """A poll_round (wait_until_settled) that reads the pending fences once and keeps the plans for
        which settle(plan, fence or None) is true; a failed read is recorded for all of them."""
        def poll_round(pending):
            try:
                current = self.read_fences([p.name for p in pending])
            except K8sError as exc:
                for plan in pending:
                    _fail(plan, exc, failures)
                return []
            return [plan for plan in pending if settle(plan, current.get(plan.name))]
        return poll_round

    def _wait_outcomes(self, plans, wait_timeout, wait_sleep, failures):
        def still_waiting(plan, fence):
            if fence is None:
                _fail_with(plan, 'NetworkFence %s disappeared while waiting for its result' % plan.name, failures)
                return False
            plan.obj = fence
            outcome = fence_outcome(fence, plan.fence_state)
            if outcome is None:
                return True
            plan.outcome = outcome
            if outcome == FAILED:
                _fail_with(plan, 'NetworkFence %s: the CSI-Addons controller reports Failed (%s): %s%s' % (
                    plan.name, 'unfence before delete' if plan.action == UNFENCE_DELETE else plan.fence_state,
                    (fence.get('status') or {}).get('message') or 'no message', _not_deleted(plan)), failures)
            return False
        pending = wait_until_settled(plans, self._poll_round(still_waiting, failures), wait_timeout=wait_timeout,
                                     wait_sleep=wait_sleep, clock=self.clock)
        if not pending:
            return
        served, nodes = self.addons_nodes_safe()
        for plan in pending:
            driver = fence_driver(plan.obj, self.classes)
            connected = [n for n in nodes if n['driver'] == driver and n['state'] == 'Connected']
            hint = '' if connected else ' (no Connected CSIAddonsNode for driver %s%s)' % (
                driver, '' if served else ': CSI-Addons is not installed')
            _fail_with(plan, 'NetworkFence %s: no result from the CSI-Addons controller after wait_timeout=%ss%s%s' % (
                plan.name, wait_timeout, hint, _not_deleted(plan)), failures)

    def addons_nodes_safe(self):
        try:
            return self.addons_nodes()
        except K8sError:
            return True, []

    def _wait_gone(self, plans, wait_timeout, wait_sleep, failures):
        def still_there(plan, fence):
            if fence is None:
                plan.gone = True
                return False
            plan.obj = fence
            return True
        for plan in wait_until_settled([p for p in plans if not p.gone], self._poll_round(still_there, failures),
                                       wait_timeout=wait_timeout, wait_sleep=wait_sleep, clock=self.clock):
            fins = (plan.obj.get('metadata') or {}).get('finalizers') or []
            _fail_with(plan, 'NetworkFence %s still exists after wait_timeout=%ss (finalizers: %s; the CSI-Addons '
                             'controller removes its own)' % (plan.name, wait_timeout, ', '.join(fins) or 'none'),
                       failures)


def _fail(plan, exc, failures):
    """Records that `plan` failed with the K8sError `exc`."""
    plan.error = exc.msg
    failures.append((plan.name, exc))


def _fail_with(plan, msg, failures):
    _fail(plan, K8sError(msg, obj=dict(kind=KIND, name=plan.name)), failures)


def _not_deleted(plan):
    """What a failed unfence-before-delete left: the fence, asking for Unfenced."""
    return '; the fence was NOT deleted (it now asks for Unfenced)' if plan.action == UNFENCE_DELETE else ''
