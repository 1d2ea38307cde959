# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: fencing readiness, "if a node died now, would each fencing path work?".

Pure functions over what the readiness modules read (Node, NetworkFence, NetworkFenceClass and
CSIAddonsNode objects as JSON, the server version, a ceph_blocklist_info result). Each check is a
dict {check, verdict, detail, fix}: verdict is pass, warn or fail; fix says what to do, in words,
for anything but a pass. What users of the field report most is fencing that fails silently or
fences the wrong thing (rook#16513, rook#12923, rook#14832, kubernetes-csi-addons#380): each
check here looks for one of those ahead of the outage.
Unit tests: tests/unit/plugins/module_utils/test__readiness.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.volfence.csi.plugins.module_utils._kube_objects import (
    node_addresses, node_ready, object_name as _name, parse_kube_version)
from ansible_collections.volfence.csi.plugins.module_utils._decisions.node_fences import plan as node_fences_plan

PASS, WARN, FAIL = 'pass', 'warn', 'fail'
_ORDER = {PASS: 0, WARN: 1, FAIL: 2}

# Kubernetes: the out-of-service taint detaches volumes from 1.26 on (NodeOutOfServiceVolumeDetach beta,
# on by default; GA in 1.28); before 1.24, detach could delete the wrong attachment (stale-volumeattachment).
OUT_OF_SERVICE_MINOR = 26
ATTACHMENT_NAME_FIX_MINOR = 24
# The names ceph-csi and its operator give the controller plugin's pods (the CSIAddonsNode of the
# plugin that answers fence requests is named after its pod).
CONTROLLER_NAME_HINTS = ('provisioner', 'ctrlplugin', 'controller')


def check(name, verdict, detail, fix=None):
    return dict(check=name, verdict=verdict, detail=detail, fix=None if verdict == PASS else fix)


def overall(checks):
    """The worst verdict of the checks (pass when there is none)."""
    worst = PASS
    for item in checks or []:
        if _ORDER.get(item.get('verdict'), 0) > _ORDER[worst]:
            worst = item['verdict']
    return worst


def version_check(git_version):
    version = parse_kube_version(git_version)
    if version is None:
        return check('kubernetes-version', WARN, 'the API server version %r cannot be read' % (git_version,),
                     'check that the API server answers /version')
    minor = version[1] if version[0] == 1 else 99
    if minor >= OUT_OF_SERVICE_MINOR:
        return check('kubernetes-version', PASS, '%s: the out-of-service taint detaches volumes' % git_version)
    problems = ['the out-of-service taint does not detach volumes before 1.26 (out_of_service_taint=true '
                'evicts pods but leaves their volumes attached)']
    if minor < ATTACHMENT_NAME_FIX_MINOR:
        problems.append('before 1.24 detach can remove the wrong VolumeAttachment (attachment-name collision: '
                        'run volumeattachment_cleanup when a pod reports Multi-Attach)')
    return check('kubernetes-version', WARN, '%s: %s' % (git_version, '; '.join(problems)),
                 'upgrade Kubernetes to 1.26 or later; until then fence with the blocklist and leave '
                 'out_of_service_taint=false')


def address_checks(nodes, address_types=('InternalIP',)):
    """Every node has an address of the given types, and no two nodes share one (I1 never fences a shared
    address: a node whose address another node lists cannot be fenced by address)."""
    without, owners = [], {}
    for node in nodes or []:
        ips = [str(ip) for kind, ip in node_addresses(node) if not address_types or kind in address_types]
        if not ips:
            without.append(_name(node))
        for ip in set(ips):
            owners.setdefault(ip, []).append(_name(node))
    shared = dict((ip, sorted(names)) for ip, names in owners.items() if len(names) > 1)
    types = '/'.join(address_types or ['any'])
    out = []
    if without:
        out.append(check('node-addresses', WARN, 'nodes without an %s address: %s' % (types, ', '.join(sorted(without))),
                         'their Ceph clients cannot be tied to them by address: give them an %s, or rely on the '
                         'client addresses ceph-csi records in image metadata' % types))
    else:
        out.append(check('node-addresses', PASS, 'every node (%d) has an %s address' % (len(nodes or []), types)))
    if shared:
        out.append(check('node-address-sharing', FAIL, 'addresses listed by more than one node: %s' % '; '.join(
            '%s (%s)' % (ip, ', '.join(names)) for ip, names in sorted(shared.items())),
            'never fenced (invariant I1): give each node an address of its own, or those nodes cannot be '
            'fenced by address'))
    else:
        out.append(check('node-address-sharing', PASS, 'no two nodes share an address'))
    return out


def csi_addons_checks(nodes, driver, *, fences_served, classes, addons_served, addons_nodes):
    """CSI-Addons: the NetworkFence API, a NetworkFenceClass for the driver, the CSIAddonsNodes that carry
    fence requests (the controller plugin's) and one per node."""
    if not fences_served:
        return [check('csi-addons', WARN, 'the NetworkFence API is not served: fence_method=networkfence cannot '
                                          'work (the blocklist method does not need it)',
                      'install CSI-Addons (the volfence.csi.csi_addons role) to fence with NetworkFences')]
    out = [check('csi-addons', PASS, 'the NetworkFence API is served')]
    mine = sorted(name for name, cls in (classes or {}).items()
                  if ((cls or {}).get('spec') or {}).get('provisioner') == driver)
    if mine:
        out.append(check('networkfence-class', PASS, 'NetworkFenceClass for %s: %s' % (driver, ', '.join(mine))))
    else:
        out.append(check('networkfence-class', WARN, 'no NetworkFenceClass names %s as its provisioner' % driver,
                         'create one (with the driver\'s secret and clusterID), or give every fence the secret '
                         'and clusterID parameters of the older NetworkFence shape'))
    reports = [r for r in addons_nodes or [] if r.get('driver') == driver] if addons_served else []
    if not reports:
        out.append(check('csiaddonsnode', FAIL, 'no CSIAddonsNode for %s: a NetworkFence fails with "no connections '
                                                'for driver" (kubernetes-csi-addons#380)' % driver,
                         'run the csi-addons sidecar in the %s plugins (csi_addons_sidecar of the csi_addons role)'
                         % driver))
        return out
    out.append(check('csiaddonsnode', PASS, '%d CSIAddonsNode(s) for %s, %d Connected' % (
        len(reports), driver, len([r for r in reports if r.get('state') == 'Connected']))))
    controllers = [r for r in reports if any(hint in (r.get('name') or '') for hint in CONTROLLER_NAME_HINTS)]
    connected = [r['name'] for r in controllers if r.get('state') == 'Connected']
    if connected:
        out.append(check('csiaddonsnode-controller', PASS, 'controller plugin connected: %s' % ', '.join(connected)))
    else:
        if controllers:
            found = 'not Connected: %s' % '; '.join(
                ' '.join(str(part) for part in (r['name'], r.get('state'), r.get('message') or '') if part)
                for r in controllers)
        else:
            found = 'not found by name (%s)' % '/'.join(CONTROLLER_NAME_HINTS)
        out.append(check('csiaddonsnode-controller', FAIL if controllers else WARN,
                         "the controller plugin's CSIAddonsNode (the one that answers fence requests) is " + found,
                         'check the csi-addons sidecar of the %s controller plugin and its logs' % driver))
    by_node = {}
    for report in reports:
        by_node.setdefault(report.get('node_id'), []).append(report)
    missing, failed = [], []
    for node in nodes or []:
        if node_ready(node) != 'True':
            continue
        states = [r.get('state') for r in by_node.get(_name(node)) or []]
        if not states:
            missing.append(_name(node))
        elif 'Connected' not in states:
            failed.append('%s (%s)' % (_name(node), ', '.join(str(s) for s in states)))
    if missing or failed:
        parts = []
        if missing:
            parts.append('Ready nodes without a CSIAddonsNode for %s: %s' % (driver, ', '.join(sorted(missing))))
        if failed:
            parts.append('not Connected: %s' % ', '.join(sorted(failed)))
        out.append(check('csiaddonsnode-nodes', WARN, '; '.join(parts),
                         'check the csi-addons sidecar of the %s node plugin on those nodes' % driver))
    else:
        out.append(check('csiaddonsnode-nodes', PASS, 'every Ready node has a Connected CSIAddonsNode for %s' % driver))
    return out


PUBLISH_SECRET = 'csi.storage.k8s.io/controller-publish-secret-name'
PUBLISH_SECRET_NAMESPACE = 'csi.storage.k8s.io/controller-publish-secret-namespace'


def _args(container):
    return [str(a) for a in (container.get('command') or []) + (container.get('args') or [])]


def _flag(args, name):
    """The value of --name or --name=value in a container's arguments: True for a bare flag, None if absent."""
    for arg in args:
        if arg == '--' + name:
            return True
        if arg.startswith('--' + name + '='):
            return arg.split('=', 1)[1]
    return None


def ceph_csi_checks(driver, csidrivers, storageclasses, workloads, operator_drivers=None):
    """The driver's own settings fencing depends on: its CSIDriver requires attachment (no VolumeAttachment,
    no ControllerUnpublish: ceph-csi never learns a node lost a volume), its StorageClasses name the
    controller-publish secret (ControllerPublish/Unpublish act on Ceph with it), and its controller plugin runs
    with fencing on (--enable-fencing on the cephcsi container with --controllerserver=true and
    --drivername=<driver> of a Deployment, or ceph-csi-operator's Driver.spec.enableFencing)."""
    out = []
    csidriver = dict((_name(d), d) for d in csidrivers or []).get(driver)
    if csidriver is None:
        out.append(check('csidriver', FAIL, 'no CSIDriver named %s: no volume of this driver can be fenced' % driver,
                         'check the driver name (the provisioner of its StorageClasses)'))
    elif ((csidriver.get('spec') or {}).get('attachRequired', True)) is False:
        out.append(check('csidriver', WARN, 'CSIDriver %s has attachRequired=false: no VolumeAttachments, so no '
                                            'ControllerUnpublish tells the driver that a node lost a volume' % driver,
                         'set attachRequired: true (ceph-csi RBD deploys it so)'))
    else:
        out.append(check('csidriver', PASS, 'CSIDriver %s requires attachment' % driver))
    classes = [c for c in storageclasses or [] if c.get('provisioner') == driver]
    without = sorted(_name(c) for c in classes
                     if not ((c.get('parameters') or {}).get(PUBLISH_SECRET)
                             and (c.get('parameters') or {}).get(PUBLISH_SECRET_NAMESPACE)))
    if not classes:
        out.append(check('controller-publish-secret', WARN, 'no StorageClass has %s as its provisioner' % driver,
                         'check the driver name'))
    elif without:
        out.append(check('controller-publish-secret', WARN, 'StorageClasses without the controller-publish secret: '
                                                            '%s' % ', '.join(without),
                         'add %s and %s (the Ceph user the controller plugin fences with)'
                         % (PUBLISH_SECRET, PUBLISH_SECRET_NAMESPACE)))
    else:
        out.append(check('controller-publish-secret', PASS, 'every StorageClass of %s (%d) names the '
                                                            'controller-publish secret' % (driver, len(classes))))
    seen = []
    for workload in workloads or []:
        template = (((workload.get('spec') or {}).get('template') or {}).get('spec') or {})
        for container in template.get('containers') or []:
            args = _args(container)
            if _flag(args, 'drivername') == driver and str(_flag(args, 'controllerserver')).lower() == 'true':
                fencing = _flag(args, 'enable-fencing')
                seen.append(('%s/%s' % ((workload.get('metadata') or {}).get('namespace'), _name(workload)),
                             fencing is True or str(fencing).lower() == 'true'))
    for item in operator_drivers or []:
        if _name(item) == driver:
            seen.append(('Driver %s' % driver, bool((item.get('spec') or {}).get('enableFencing'))))
    if not seen:
        out.append(dict(check('ceph-csi-fencing', WARN, 'the controller plugin of %s was not found (a Deployment running '
                                                        'cephcsi with --drivername=%s --controllerserver=true, or a '
                                                        'ceph-csi-operator Driver): who fences on detach is not known; '
                                                        'node_failover fences the node\'s clients, node_recover lifts '
                                                        'them' % (driver, driver),
                              'check by hand whether it runs with --enable-fencing (Driver.spec.enableFencing)'),
                        fences=['volfence.csi node_failover'], unfences=['volfence.csi node_recover']))
    elif all(on for _where, on in seen):
        out.append(dict(check('ceph-csi-fencing', PASS, 'fencing on (%s): ceph-csi fences a node\'s client address for '
                                                        'three years when it detaches a volume from a node carrying the '
                                                        'out-of-service taint, and unfences it only through CSI-Addons, '
                                                        '5 min later at the earliest, once the node is back; '
                                                        'node_failover fences the node\'s clients first, node_recover '
                                                        'lifts the entries of both after the node\'s reboot'
                                                        % ', '.join(w for w, _on in seen)),
                        fences=['volfence.csi node_failover', 'ceph-csi on detach (out-of-service taint)'],
                        unfences=['volfence.csi node_recover', 'ceph-csi through CSI-Addons (GetFenceClients)']))
    else:
        out.append(dict(check('ceph-csi-fencing', WARN, 'fencing off in %s: detaching a volume from a lost node fences '
                                                        'nothing, so an out-of-service taint alone lets a live client '
                                                        'write on (rook#16513); node_failover fences the node\'s clients '
                                                        'before it taints, node_recover lifts them'
                                                        % ', '.join(w for w, on in seen if not on),
                              'fail nodes over with node_failover, not with the taint alone; or run the controller '
                              'plugin with --enable-fencing=true (ceph-csi-operator: Driver.spec.enableFencing: true)'),
                        fences=['volfence.csi node_failover'], unfences=['volfence.csi node_recover']))
    return out


def node_fences_check(nodes, fences, fence_set='default', name_prefix='volfence-', address_types=('InternalIP',)):
    """The node_fences role's pre-created fences: one per node, Unfenced, with the node's current addresses
    (a fence made before an address changed would fence the wrong one: rook#12923)."""
    fences = list(fences or [])
    plan = node_fences_plan(nodes, fences, state='present', address_types=address_types, name_prefix=name_prefix,
                            fence_set=fence_set, prune=False)
    by_name = dict((_name(f), f) for f in fences)
    if not any(name in by_name for name in (e['name'] for e in plan['entries'])) and not plan['fenced']:
        return check('node-fences', WARN, 'no pre-created NetworkFence of set %r: a failover with '
                                          'fence_method=networkfence creates one at outage time' % fence_set,
                     'run the volfence.csi.node_fences role so that fencing a node is one patch')
    missing, outdated = [], []
    for entry in plan['entries']:
        existing = by_name.get(entry['name'])
        if existing is None:
            missing.append(entry['name'])
            continue
        have = sorted(((existing.get('spec') or {}).get('cidrs') or []))
        if have != sorted(entry['cidrs']):
            outdated.append('%s has %s, the node now %s' % (
                entry['name'], ', '.join(have) or 'none', ', '.join(sorted(entry['cidrs']))))
    problems = []
    if outdated:
        problems.append('outdated CIDRs (would fence the wrong address): ' + '; '.join(outdated))
    if plan['fenced']:
        problems.append('already Fenced: ' + ', '.join(plan['fenced']))
    if missing:
        problems.append('nodes without a fence: ' + ', '.join(missing))
    if plan['conflicts']:
        problems.append('fences of another owner hold these names: ' + ', '.join(plan['conflicts']))
    if not problems:
        return check('node-fences', PASS, '%d pre-created fences of set %r, each Unfenced with its node\'s '
                                          'addresses' % (len(plan['entries']), fence_set))
    return check('node-fences', FAIL if outdated else WARN, '; '.join(problems),
                 'run the volfence.csi.node_fences role again (it updates CIDRs of Unfenced fences); a Fenced fence '
                 'is lifted by node_recover')


def ceph_checks(result):
    """From a ceph_blocklist_info result (or its failure): the monitors answer with the configured user,
    the blocklist can be read, the releases, and whether range fences are there."""
    if not isinstance(result, dict) or result.get('failed'):
        msg = (result or {}).get('msg') if isinstance(result, dict) else None
        return [check('ceph-connection', FAIL, 'cannot read the blocklist: %s' % (msg or 'no answer'),
                      'check the monitors (mon_host / ceph.conf), the user and its keyring, and that the user may '
                      'run "osd blocklist ls"')]
    versions = result.get('versions') or {}
    client = versions.get('client') or {}
    cluster = versions.get('cluster') or {}
    out = [check('ceph-connection', PASS, 'the monitors answer; the blocklist has %s entries (client %s %s, '
                                          'backend %s)' % (result.get('total'), client.get('release'),
                                                           client.get('version'), result.get('backend')))]
    if cluster.get('mixed'):
        out.append(check('ceph-versions', WARN, 'the cluster runs several versions: %s' % ', '.join(
            cluster.get('versions') or []), 'finish the upgrade before relying on fencing behaviour of the newer one'))
    elif cluster.get('error'):
        out.append(check('ceph-versions', WARN, 'the cluster\'s versions cannot be read: %s' % cluster['error'],
                         'give the user "mon allow r" to read versions'))
    else:
        out.append(check('ceph-versions', PASS, 'cluster %s %s' % (cluster.get('release'), cluster.get('version'))))
    if result.get('range_supported'):
        out.append(check('ceph-range-fence', PASS, 'range entries (osd blocklist range) are supported'))
    else:
        out.append(check('ceph-range-fence', WARN, 'no range entries before Quincy: a NetworkFence of a CIDR falls '
                                                   'back to one entry per address',
                         'upgrade Ceph to Quincy or later for range fences'))
    return out


# The probe of the fence permission: an address of TEST-NET-1 (RFC 5737), which no client can have.
PROBE_ADDRESS = '192.0.2.1:0/3735928559'


def _answered(result):
    return isinstance(result, dict) and not result.get('skipped')


def probe_check(added=None, removed=None):
    """From the probe's two ceph_blocklist results (state=present, then absent, of PROBE_ADDRESS): may the
    configured user fence? Not probed (skipped, check mode): a warning."""
    if not _answered(added):
        return check('ceph-fence-permission', WARN,
                     'not probed (probe_blocklist=false or check mode): whether the user may add blocklist entries '
                     'is not known', 'run with probe_blocklist=true, outside check mode')
    if added.get('failed'):
        return check('ceph-fence-permission', FAIL, 'the user may not add a blocklist entry: %s' % (
            added.get('msg') or 'no answer'),
            'give the user the monitor capability to fence: mon \'profile rbd\' (ceph-csi\'s), or '
            'mon \'allow command "osd blocklist"\'')
    if not _answered(removed) or removed.get('failed'):
        return check('ceph-fence-permission', WARN, 'the user may fence, but the probe entry %s could not be removed: %s'
                     % (PROBE_ADDRESS, (removed or {}).get('msg') or 'not tried'),
                     'it expires by itself within 60 s; check that the user may remove entries (node_recover does)')
    return check('ceph-fence-permission', PASS, 'the user added and removed the probe entry %s (TEST-NET-1, no '
                                                'client has it)' % PROBE_ADDRESS)


def report(k8s_checks, ceph_result=None, fail_on=FAIL, probe_added=None, probe_removed=None, *, failed_step=None):
    """The readiness report: every check (Kubernetes, then Ceph from a ceph_blocklist_info result, or a
    warning that there is no Ceph side), the worst verdict, counts, one summary line per check (with its
    fix when it does not pass) and whether the run fails: its verdict reaches `fail_on` (fail, warn, never).
    A step that failed on its host (failed_step: host, step, reason) is a failed check: the checks of that
    side and of the sides after it were not made, and a Ceph side it kept from running is not missing."""
    checks = list(k8s_checks or [])
    if failed_step:
        checks.append(check('failed-step', FAIL, '%s failed on %s (%s): its checks, and those after it, were not made'
                            % (failed_step.get('step'), failed_step.get('host'), failed_step.get('reason')),
                            'make %s reachable, with a Python that runs the modules, and run again'
                            % failed_step.get('host')))
    if ceph_result is None:
        if not failed_step:
            checks.append(check('ceph', WARN, 'no ceph_admin host: the blocklist path was not checked',
                                'add the Ceph admin host to the ceph_admin group of the inventory'))
    else:
        checks.extend(ceph_checks(ceph_result))
        if not (isinstance(ceph_result, dict) and ceph_result.get('failed')):
            checks.append(probe_check(probe_added, probe_removed))
    verdict = overall(checks)
    counts = dict((v, len([c for c in checks if c.get('verdict') == v])) for v in (PASS, WARN, FAIL))
    summary = ['fencing readiness: %s, %s pass, %s warn, %s fail' % (
        verdict.upper(), counts[PASS], counts[WARN], counts[FAIL])]
    for item in checks:
        line = '%-4s %s: %s' % (item['verdict'].upper(), item['check'], item['detail'])
        if item.get('fix'):
            line += ' -> fix: ' + item['fix']
        summary.append(line)
    failed = fail_on != 'never' and _ORDER[verdict] >= _ORDER.get(fail_on, _ORDER[FAIL])
    return dict(checks=checks, verdict=verdict, counts=counts, summary=summary, failed=failed)
