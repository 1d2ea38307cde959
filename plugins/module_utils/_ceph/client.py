# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to volfence.csi: one Ceph client, two backends.

* ``rados``: the ``rados``/``rbd`` Python bindings, one connection for everything; JSON mon
  commands through ``Rados.mon_command``. Imported lazily: this file imports without them.
* ``cli``: the ``ceph``/``rbd`` command line tools with ``--format json``, optionally behind a
  command prefix (``cephadm shell --``, ``kubectl -n rook-ceph exec deploy/rook-ceph-tools --``).

Both raise CephError subclasses that carry the command (argv, or the mon command as JSON), the
return code, stdout and stderr.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import contextlib
import errno
import functools
import json
import os
import re
import shlex
import signal
import subprocess
import tempfile
import threading

from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import (
    CephCommandError,
    CephConnectionError,
    CephError,
    CephNotFoundError,
    ceph_environment,
    check_expire,
    check_name,
    errno_name,
    stderr_summary,
)
from ansible_collections.volfence.csi.plugins.module_utils._ceph.versions import (
    bindings_client_version,
    client_info,
    cluster_info,
    find_key,
    keyring_candidates,
    unreadable_key_message,
)
from ansible_collections.volfence.csi.plugins.module_utils._parallel import run_parallel
from ansible_collections.volfence.csi.plugins.module_utils._ranges import MAX_CALL_TIMEOUT, check_range

DEFAULT_WORKERS = 64
DEFAULT_IMAGE_WORKERS = 16


def import_bindings():
    """(rados, rbd) modules, or (None, error text) when the bindings are not installed."""
    try:
        import rados  # pylint: disable=import-error
        import rbd  # pylint: disable=import-error
    except ImportError as exc:
        return None, str(exc)
    return (rados, rbd), None


# --------------------------------------------------------------------------- commands

class MonCommand(object):
    """A monitor command, as CLI arguments and as the JSON the monitors take."""

    __slots__ = ('argv', 'json')

    def __init__(self, argv, json_cmd):
        # I9: the `ceph` CLI appends $CEPH_ARGS after its argv, so a `--` before the positionals
        # would turn those into positionals (tried on the lab: "Invalid command: unused
        # arguments"). No user- or cluster-given name is a positional of a mon command here (they
        # are parsed addresses, networks and numbers), and this refuses any word that is an option.
        for word in argv:
            if str(word).startswith('-'):
                raise ValueError('mon command word %r starts with "-": it would be read as an option' % (word,))
        self.argv = list(argv)
        self.json = dict(json_cmd)
        self.json.setdefault('format', 'json')

    def describe(self):
        return 'ceph ' + ' '.join(shlex.quote(a) for a in self.argv)

    def __repr__(self):
        return 'MonCommand(%r)' % self.describe()


def dump_command(kind):
    """`ceph mon dump`, `mgr dump`, `osd dump`, `fs dump`, `versions`."""
    words = kind.split()
    return MonCommand(words, {'prefix': kind})


def blocklist_ls_command(naming='blocklist'):
    return MonCommand(['osd', naming, 'ls'], {'prefix': 'osd %s ls' % naming})


def blocklist_change_command(naming, op, target, expire=None, is_range=False):
    """osd blocklist [range] add|rm <target> [<expire>]; `naming` is blocklist or blacklist."""
    argv = ['osd', naming] + (['range'] if is_range else []) + [op, target]
    cmd = {'prefix': 'osd %s' % naming, '%sop' % naming: op, 'addr': target}
    if is_range:
        cmd['range'] = 'range'
    if expire is not None and op == 'add':
        expire = check_expire(expire)
        argv.append(_number(expire))
        # The monitors declare expire a CephFloat: a JSON integer is refused ("bad or missing field
        # 'expire'", EINVAL, seen on the lab's 16.2.15 with 120 against 120.0); a float is taken by
        # every release (16, 18, 20, tried on the lab; go-ceph sends a float64 too). The CLI parses
        # its word itself, so there a plain '3600' is fine.
        cmd['expire'] = float(expire)
    return MonCommand(argv, cmd)


def _number(value):
    value = float(value)
    return ('%d' % value) if value == int(value) else repr(value)


# --------------------------------------------------------------------------- images

class ImageSpec(object):
    """pool[/namespace]/image."""

    __slots__ = ('pool', 'namespace', 'image')

    def __init__(self, pool, namespace, image):
        self.pool, self.namespace, self.image = pool, namespace or '', image

    def __str__(self):
        return '/'.join(p for p in (self.pool, self.namespace, self.image) if p)

    def __repr__(self):
        return 'ImageSpec(%r)' % str(self)

    def __eq__(self, other):
        return isinstance(other, ImageSpec) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))


_NAME = re.compile(r'^[^/@\s]+$')


def parse_image_spec(text, what='image spec'):
    """'pool/image' or 'pool/namespace/image' to an ImageSpec: the one parser of image specs (the
    `images` and `image_spec` options, the playbooks' `pool/image` strings). Raises ValueError naming
    `what` (the option), also for a part that starts with '-' (I9)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError('%s must be pool/image or pool/namespace/image, got %r: nothing was changed' % (what, text))
    parts = text.strip().split('/')
    if len(parts) not in (2, 3) or not all(_NAME.match(p) for p in parts):
        raise ValueError('%s %r must be pool/image or pool/namespace/image '
                         '(no snapshots, no spaces, no empty part): nothing was changed' % (what, text))
    for part_name, part in zip(('pool', 'namespace', 'image') if len(parts) == 3 else ('pool', 'image'), parts):
        check_name(part, '%s %r: %s' % (what, text, part_name))
    if len(parts) == 2:
        return ImageSpec(parts[0], '', parts[1])
    return ImageSpec(parts[0], parts[1], parts[2])


def image_spec(pool, namespace, image):
    """An ImageSpec from separate names. Raises ValueError, also for a name that starts with '-' (I9)."""
    for what, value in (('pool', pool), ('image', image)):
        if not value or not _NAME.match(value):
            raise ValueError('%s %r is not a valid name' % (what, value))
        check_name(value, what)
    if namespace and not _NAME.match(namespace):
        raise ValueError('namespace %r is not a valid name' % namespace)
    check_name(namespace, 'namespace')
    return ImageSpec(pool, namespace or '', image)


# The options naming one image, shared by rbd_lock, rbd_lock_info and rbd_watchers_info (their
# documentation: the IMAGE fragment of doc_fragments/ceph.py): the whole spec, or its parts.
IMAGE_OPTIONS = dict(
    image_spec=dict(type='str'),
    pool=dict(type='str'),
    namespace=dict(type='str', default=''),
    image=dict(type='str'),
)
IMAGE_MUTUALLY_EXCLUSIVE = [('image_spec', 'pool'), ('image_spec', 'namespace'), ('image_spec', 'image')]


def image_spec_of(params):
    """The ImageSpec that a module's IMAGE_OPTIONS name (`image_spec`, or `image` with `pool` and
    `namespace`, or `image` as pool/image as the rbd tool takes it), None when they name none.
    Raises ValueError for a bad spec or name, or a pool without its image or an image without its pool."""
    if params.get('image_spec') is not None:
        return parse_image_spec(params['image_spec'], 'image_spec')
    image = params.get('image')
    if image is None:
        if params.get('pool'):
            raise ValueError('pool %s needs image (the image\'s name): nothing was changed' % params['pool'])
        return None
    if '/' in image and not image.startswith('-'):   # a name that is an option is refused as a name (I9), below
        if params.get('pool') or params.get('namespace'):
            raise ValueError('image %s already names its pool: give it alone, or give pool and the image\'s '
                             'name alone: nothing was changed' % image)
        return parse_image_spec(image, 'image')
    if not params.get('pool'):
        raise ValueError('image %s needs its pool: give image=<pool>/%s (or <pool>/<namespace>/%s), or pool: '
                         'nothing was changed' % (image, image, image))
    return image_spec(params.get('pool'), params.get('namespace'), image)


# --------------------------------------------------------------------------- settings

class CephSettings(object):
    """The shared options, validated. `params` is a module's params dict; `environ` (os.environ by
    default) gives what an option left unset: CEPH_ARGS and CEPH_CONF, read as Ceph's tools read
    them (common.ceph_environment), so that a module finds the cluster where `ceph -s` does."""

    def __init__(self, params, environ=None):
        from_env, self.extra_args = ceph_environment(os.environ if environ is None else environ)
        # where each setting came from, for the messages: the option, or the environment variable
        self.sources = {}

        def setting(name, default=None):
            if params.get(name) not in (None, ''):
                self.sources[name] = name
                return params.get(name)
            value, source = from_env.get(name, (default, None))
            if source:
                self.sources[name] = source
            return value
        self.cluster = setting('cluster', 'ceph')
        self.conf = setting('conf')
        self.keyring = None if params.get('key') else setting('keyring')
        self.key = params.get('key')
        user = setting('user', 'admin')
        self.user = user[len('client.'):] if user.startswith('client.') else user
        self.mon_host = setting('mon_host')
        self.timeout = int(30 if params.get('timeout') is None else params.get('timeout'))
        self.backend = params.get('backend') or 'auto'
        self.command_prefix = list(params.get('command_prefix') or [])
        check_range(self.timeout, 'timeout', 1, MAX_CALL_TIMEOUT, 'seconds')
        for what, value in (('cluster', self.cluster), ('user', self.user), ('mon_host', self.mon_host),
                            ('conf', self.conf), ('keyring', self.keyring)):
            check_name(value, self.said(what))  # I9: each is the value of a CLI option
        if self.backend not in ('auto', 'rados', 'cli'):
            raise ValueError('backend must be one of auto, rados, cli; got %r' % self.backend)
        if self.backend == 'rados' and self.command_prefix:
            raise ValueError('command_prefix only applies to the cli backend (backend=rados was asked)')
        if not self.command_prefix:
            # Paths are local only without a prefix (in a container they name the container's files).
            for what, path in (('conf', self.conf), ('keyring', self.keyring)):
                if path and not os.path.isfile(path):
                    raise CephConnectionError('%s file %s does not exist or is not a file: nothing was done'
                                              % (self.said(what), path))
                if path and not os.access(path, os.R_OK):
                    raise CephConnectionError('%s file %s is not readable by this user: nothing was done'
                                              % (self.said(what), path))

    def said(self, name):
        """`name` as the user gave it: 'conf', or 'conf (from CEPH_CONF)'."""
        source = self.sources.get(name, name)
        return name if source == name else '%s (from %s)' % (name, source)

    def tool_environment(self):
        """The environment for the ceph/rbd tools: CEPH_ARGS holds only what the settings did not
        take from it (the tools append it to their arguments: an option given to the module must not
        be overridden by the environment)."""
        env = dict(os.environ)
        env.pop('CEPH_ARGS', None)
        if self.extra_args:
            env['CEPH_ARGS'] = ' '.join(self.extra_args)
        return env

    @property
    def entity(self):
        return 'client.' + self.user


def connect(params, module_tmpdir=None):
    """The client for `params` (a module's params): the chosen backend, connected."""
    settings = CephSettings(params)
    choice = settings.backend
    if choice == 'auto':
        choice = 'cli' if settings.command_prefix else 'rados'
        if choice == 'rados' and import_bindings()[0] is None:
            choice = 'cli'
    if choice == 'rados':
        bindings, error = import_bindings()
        if bindings is None:
            raise CephError('backend=rados needs the python3-rados and python3-rbd bindings on the target '
                            '(import failed: %s); install them, or use backend=cli' % error)
        client = RadosBackend(settings, bindings, module_tmpdir)
    else:
        client = CliBackend(settings, module_tmpdir)
    client.connect()
    # Read once, right after connecting, so that every result (a failure later on too) can say
    # which releases were at work; see versions().
    client.known_versions = client.versions()
    return client


def failure_kwargs(exc, client):
    """fail_json() keyword arguments for a CephError: its own (msg, cmd, rc, ...), the backend,
    and `versions` (from the error when connecting failed, else as read after connecting)."""
    kwargs = exc.fail_kwargs()
    kwargs['backend'] = client.name if client is not None else (
        ((exc.versions or {}).get('client') or {}).get('backend'))
    if 'versions' not in kwargs and client is not None and client.known_versions is not None:
        kwargs['versions'] = client.known_versions
    return kwargs


@contextlib.contextmanager
def module_session(module, partial=None):
    """The connected client of one Ceph module run, closed whatever happens.

    A CephError or ValueError leaving the block ends the module with fail_json: what `partial`
    holds by then (I7: what was done before the error stays in the report), the error's own
    details (msg, cmd, rc, ...), the backend and `versions`. Errors a module reports in its own
    way are caught inside the block."""
    client = None
    try:
        client = connect(module.params, module.tmpdir)
        yield client
    except CephError as exc:
        kwargs = dict(partial or {})
        kwargs.update(failure_kwargs(exc, client))
        module.fail_json(**kwargs)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    finally:
        if client is not None:
            client.close()


class _Base(object):
    name = None

    def __init__(self, settings, tmpdir=None):
        self.settings = settings
        self.timeout = settings.timeout
        self._tmp_keyring = None
        self._client_version = None
        self.known_versions = None
        self.keyring = settings.keyring
        if settings.key:
            handle, path = tempfile.mkstemp(prefix='volfence-ceph-', suffix='.keyring', dir=tmpdir)
            with os.fdopen(handle, 'w') as out:
                out.write('[%s]\n\tkey = %s\n' % (settings.entity, settings.key))
            os.chmod(path, 0o600)
            self._tmp_keyring = self.keyring = path

    def close(self):
        if self._tmp_keyring and os.path.exists(self._tmp_keyring):
            os.unlink(self._tmp_keyring)
            self._tmp_keyring = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def run_parallel(self, func, items, workers):
        """[(item, result, error)] in the order of `items`; `workers` bounds the concurrency; a
        CephError is that item's error."""
        return run_parallel(func, items, workers, errors=(CephError,))

    def mon_many(self, commands, workers=DEFAULT_WORKERS):
        return self.run_parallel(self.mon, commands, workers)

    # ------------------------------------------------------------------ versions

    def client_version(self):
        """versions.client: the backend and the Ceph release of its library or CLI (cached)."""
        if self._client_version is None:
            self._client_version = self._read_client_version()
        return self._client_version

    def cluster_version(self):
        """versions.cluster, from the `versions` mon command (every daemon), else `version` (the
        monitor that answers; a user whose caps refuse `versions` may still be allowed that).
        Never raises: what went wrong is its `error`."""
        errors = []
        for kind in ('versions', 'version'):
            command = dump_command(kind)
            try:
                doc = self.mon_json(command)
            except CephConnectionError:
                raise  # not connected at all (the CLI connects here first): the module fails with it
            except CephError as exc:
                errors.append('%s: %s' % (command.describe(), exc.msg))
                if exc.rc is not None and abs(int(exc.rc)) == errno.ETIMEDOUT:
                    break  # a second command would only wait as long again
                continue
            info = cluster_info(doc, None) if kind == 'versions' else cluster_info(None, doc)
            if info['version']:
                return info
            errors.append('%s: %s' % (command.describe(), info['error']))
        return cluster_info(error='; '.join(errors))

    def versions(self):
        """{'client': ..., 'cluster': ...}: what the modules return as `versions`."""
        return dict(client=self.client_version(), cluster=self.cluster_version())

    def key_problem(self):
        """The message for a key this client cannot read (an aes256k key and a client older
        than 19.2.6/20.2.4), or None. Read from the key option or the keyring the client uses;
        with a command_prefix the keyring paths name the container's files, so only the key
        option is looked at."""
        s = self.settings
        if s.command_prefix and not s.key:
            return None
        paths = [] if s.key else keyring_candidates(s.cluster, s.entity, self.keyring, s.conf)
        where, key = find_key(s.entity, paths, s.key)
        return unreadable_key_message(s.entity, where, key, self.client_version(), bool(s.command_prefix))

    def connect_versions(self, error):
        """`versions` for a connect failure: the client's, and the cluster's unknown (with why)."""
        return dict(client=self.client_version(), cluster=cluster_info(error='not connected: %s' % error))

    def mon_json(self, command, what=None):
        from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import json_document
        outbuf, _outs = self.mon(command)
        return json_document(outbuf, what or command.describe(), empty={})

    def inspect_images(self, specs, metadata=True, workers=DEFAULT_IMAGE_WORKERS, locks=False):
        """[(spec, {'watchers': [...], 'metadata': {...}, 'locks': {...}}, error)] for every spec (locks: as
        image_locks() returns them, only when asked)."""
        return self.run_parallel(lambda spec: self.inspect_image(spec, metadata, locks), specs, workers)


# --------------------------------------------------------------------------- bindings backend

class RadosBackend(_Base):
    """The rados/rbd Python bindings: one librados connection for everything."""

    name = 'rados'

    def __init__(self, settings, bindings, tmpdir=None):
        super(RadosBackend, self).__init__(settings, tmpdir)
        self.rados, self.rbd = bindings
        self.cluster = None
        self._ioctx = {}
        self._lock = threading.Lock()

    def connect(self):
        s = self.settings
        conf = {
            'client_mount_timeout': str(s.timeout),
            'rados_mon_op_timeout': str(s.timeout),
            'rados_osd_op_timeout': str(s.timeout),
            # librbd's break_lock() blocklists the locker itself by default (with its own expiry,
            # which would also shorten ours): rbd_lock decides that explicitly (blocklist_locker).
            'rbd_blocklist_on_break_lock': 'false',
        }
        if self.keyring:
            conf['keyring'] = self.keyring
        if s.mon_host:
            conf['mon_host'] = s.mon_host
        # No conf: Ceph's default search (CEPH_CONF, then /etc/ceph/$cluster.conf), which the bindings
        # do for conffile='' (None reads no file at all); with mon_host alone no file is read.
        conffile = s.conf if s.conf else (None if s.mon_host else '')
        what = 'connect to Ceph cluster %r as %s%s' % (
            s.cluster, s.entity, (' (mon_host %s)' % s.mon_host) if s.mon_host else '')
        try:
            self.cluster = self.rados.Rados(clustername=s.cluster, rados_id=s.user, conffile=conffile, conf=conf)
            if s.extra_args:  # the rest of CEPH_ARGS, as the tools give it to librados (conf_parse_argv)
                self.cluster.conf_parse_argv(['volfence'] + s.extra_args)
            self.cluster.connect(timeout=s.timeout)
        except self.rados.Error as exc:
            self.cluster = None
            code = getattr(exc, 'errno', None)
            hint = _connect_hint(code, s)
            problem = self.key_problem()
            raise CephConnectionError(problem or 'could not %s within %ss: %s%s' % (what, s.timeout, exc, hint),
                                      cmd='rados.Rados(%s).connect(timeout=%d)' % (
                                          ', '.join('%s=%r' % kv for kv in sorted(
                                              dict(clustername=s.cluster, rados_id=s.user, conffile=conffile,
                                                   conf=dict((k, v) for k, v in conf.items())).items())),
                                          s.timeout),
                                      rc=code, stdout='', stderr=str(exc), versions=self.connect_versions(exc))

    def _read_client_version(self):
        text, error = bindings_client_version()
        return client_info(self.name, text, error)

    def close(self):
        for ioctx in self._ioctx.values():
            try:
                ioctx.close()
            except Exception:  # pylint: disable=broad-except
                pass
        self._ioctx = {}
        if self.cluster is not None:
            self.cluster.shutdown()
            self.cluster = None
        super(RadosBackend, self).close()

    def client_address(self):
        return self.cluster.get_addrs() if self.cluster is not None else None

    def mon(self, command):
        try:
            ret, outbuf, outs = self.cluster.mon_command(json.dumps(command.json, sort_keys=True), b'',
                                                         timeout=self.timeout)
        except self.rados.Error as exc:
            raise CephCommandError('mon command %s failed: %s' % (json.dumps(command.json, sort_keys=True), exc),
                                   cmd=command.json, rc=getattr(exc, 'errno', None), stdout='', stderr=str(exc))
        outbuf = outbuf.decode('utf-8', 'replace') if isinstance(outbuf, bytes) else (outbuf or '')
        if ret != 0:
            raise CephCommandError('mon command %s failed: %s (%d): %s' % (
                json.dumps(command.json, sort_keys=True), errno_name(ret) or 'error', ret, outs),
                cmd=command.json, rc=ret, stdout=outbuf, stderr=outs)
        return outbuf, outs

    # ------------------------------------------------------------------ rbd

    def _open_ioctx(self, spec):
        key = (spec.pool, spec.namespace)
        with self._lock:
            ioctx = self._ioctx.get(key)
            if ioctx is None:
                try:
                    ioctx = self.cluster.open_ioctx(spec.pool)
                except self.rados.ObjectNotFound as exc:
                    raise CephNotFoundError('pool %r does not exist (image %s)' % (spec.pool, spec),
                                            cmd="open_ioctx(%r)" % spec.pool, rc=errno.ENOENT, stderr=str(exc))
                except self.rados.Error as exc:
                    raise CephCommandError('could not open pool %r: %s' % (spec.pool, exc),
                                           cmd="open_ioctx(%r)" % spec.pool, rc=getattr(exc, 'errno', None),
                                           stderr=str(exc))
                if spec.namespace:
                    ioctx.set_namespace(spec.namespace)
                self._ioctx[key] = ioctx
            return ioctx

    def _image(self, spec, read_only=True):
        ioctx = self._open_ioctx(spec)
        call = 'rbd.Image(%s, read_only=%s)' % (spec, read_only)
        try:
            return self.rbd.Image(ioctx, spec.image, read_only=read_only)
        except self.rbd.ImageNotFound as exc:
            raise CephNotFoundError('image %s does not exist%s' % (
                spec, ' (or namespace %r does not)' % spec.namespace if spec.namespace else ''),
                cmd=call, rc=errno.ENOENT, stderr=str(exc))
        except self.rbd.Error as exc:
            raise CephCommandError('could not open image %s: %s' % (spec, exc), cmd=call,
                                   rc=getattr(exc, 'errno', None), stderr=str(exc))

    def _with_image(self, spec, what, func, read_only=True):
        image = self._image(spec, read_only)
        try:
            return func(image)
        except self.rbd.Error as exc:
            raise CephCommandError('%s on image %s failed: %s' % (what, spec, exc), cmd='%s(%s)' % (what, spec),
                                   rc=getattr(exc, 'errno', None), stderr=str(exc))
        finally:
            image.close()

    def inspect_image(self, spec, metadata=True, locks=False):
        def read(image):
            out = {'watchers': [dict(address=w['addr'], client_id=int(w['id']), cookie=int(w['cookie']))
                                for w in image.watchers_list()]}
            if metadata:
                out['metadata'] = dict(image.metadata_list())
            if locks:  # the same read-only open: no extra round trip to open the image
                out['locks'] = normalize_lockers_bindings(image.list_lockers())
            return out
        return self._with_image(spec, 'watchers_list', read)

    def image_locks(self, spec):
        return self._with_image(spec, 'list_lockers', lambda image: normalize_lockers_bindings(image.list_lockers()))

    def lock_owners(self, spec):
        """lock_get_owners() needs a read-write open (read-only opens disable the exclusive-lock
        feature: EINVAL); that open registers a short-lived watcher of this client."""
        def owners(image):
            return [dict(address=o['owner'], mode='exclusive' if o['mode'] == 0 else 'shared')
                    for o in image.lock_get_owners()]
        return self._with_image(spec, 'lock_get_owners', owners, read_only=False)

    def break_lock(self, spec, locker, lock_id):
        self._with_image(spec, 'break_lock', lambda image: image.break_lock(locker, lock_id))

    def add_lock(self, spec, lock_id, tag=None):
        def take(image):
            if tag is None:
                image.lock_exclusive(lock_id)
            else:
                image.lock_shared(lock_id, tag)
        self._with_image(spec, 'lock_shared' if tag is not None else 'lock_exclusive', take)


def normalize_lockers_bindings(value):
    """rbd.Image.list_lockers() returns [] without locks, else {'tag', 'exclusive', 'lockers':
    [(client, cookie, address)]}; the lock id is the cookie."""
    if not value:
        return dict(exclusive=None, tag=None, lockers=[])
    return dict(exclusive=bool(value.get('exclusive')), tag=value.get('tag') or '',
                lockers=[dict(locker=item[0], id=item[1], address=item[2]) for item in value.get('lockers', [])])


def _connect_hint(code, settings):
    if code in (errno.ETIMEDOUT, -errno.ETIMEDOUT):
        return ' (are the monitors%s reachable from here?)' % (
            ' at %s' % settings.mon_host if settings.mon_host else '')
    if code in (errno.ENOENT, -errno.ENOENT):
        return ' (no usable keyring or configuration for %s: check conf/keyring)' % settings.entity
    if code in (errno.EACCES, -errno.EACCES, errno.EPERM, -errno.EPERM):
        return ' (cephx refused %s: wrong key or missing caps)' % settings.entity
    return ''


# --------------------------------------------------------------------------- CLI backend

class CliBackend(_Base):
    """The ceph/rbd tools with --format json, each call a process, behind an optional prefix."""

    name = 'cli'
    # Seconds a CLI call gets beyond `timeout` (the tools' own timeouts fire first) before its
    # whole process group is killed.
    grace = 15

    def __init__(self, settings, tmpdir=None, runner=None):
        super(CliBackend, self).__init__(settings, tmpdir)
        self.runner = runner or functools.partial(_run, env=settings.tool_environment())

    def connect(self):
        """Nothing to keep open: check that the tools are there (the first command connects)."""
        if not self.settings.command_prefix:
            for tool in ('ceph', 'rbd'):
                if not _which(tool):
                    raise CephError('backend=cli needs the %s command on the target (not found in PATH); '
                                    'install ceph-common, set command_prefix, or use backend=rados' % tool)

    def client_address(self):
        return None

    def _read_client_version(self):
        """`rbd --version` through the same prefix: the release of the tools that do the work (in a
        cephadm or Rook container, the container's). ceph-common ships `ceph` and `rbd` together, on
        the same librados; rbd is a C++ program that answers in about 0.05 s, where the `ceph` script
        starts a Python interpreter and its bindings first (about 0.6 s and 0.15 CPU-s on 2 cores)."""
        argv = list(self.settings.command_prefix) + ['rbd', '--version']
        rc, out, err = self.runner(argv, self.timeout + self.grace)
        if rc != 0:
            return client_info(self.name, error='%s failed (rc=%d): %s' % (
                ' '.join(shlex.quote(a) for a in argv), rc, stderr_summary(err) or stderr_summary(out) or 'no output'))
        return client_info(self.name, out.strip())

    def base(self, tool):
        s = self.settings
        argv = list(s.command_prefix) + [tool, '--cluster', s.cluster, '--id', s.user]
        if s.conf:
            argv += ['--conf', s.conf]
        if self.keyring:
            argv += ['--keyring', self.keyring]
        if s.mon_host:
            argv += ['--mon_host', s.mon_host]
        if tool == 'ceph':
            argv += ['--connect-timeout', str(s.timeout)]
        else:
            argv += ['--rbd_blocklist_on_break_lock', 'false']  # see RadosBackend.connect
        argv += ['--client_mount_timeout', str(s.timeout), '--rados_mon_op_timeout', str(s.timeout),
                 '--rados_osd_op_timeout', str(s.timeout)]
        return argv

    def run(self, tool, args, what=None):
        argv = self.base(tool) + list(args)
        rc, out, err = self.runner(argv, self.timeout + self.grace)
        if rc != 0:
            summary = stderr_summary(err) or stderr_summary(out) or 'no output'
            error_class = CephCommandError
            if rc == -1:
                summary = 'no answer within %ss (timeout)' % self.timeout
                error_class = CephConnectionError
            elif rc in (errno.ETIMEDOUT, 1) and ('timed out' in err or "couldn't connect" in err):
                error_class = CephConnectionError
                summary += ' (are the monitors%s reachable?)' % (
                    ' at %s' % self.settings.mon_host if self.settings.mon_host else '')
            elif rc == errno.ENOENT and ('error opening' in err):
                error_class = CephNotFoundError
            if _looks_like_connect_failure(rc, err):
                problem = self.key_problem()
                if problem:
                    raise CephConnectionError(problem, cmd=argv, rc=rc, stdout=out, stderr=err,
                                              versions=self.connect_versions(summary))
            raise error_class('%s failed (rc=%d%s): %s' % (
                what or ' '.join(shlex.quote(a) for a in argv), rc,
                (' ' + errno_name(rc)) if rc > 1 and errno_name(rc) else '', summary),
                cmd=argv, rc=rc, stdout=out, stderr=err)
        return out, err

    def mon(self, command):
        out, err = self.run('ceph', command.argv + ['--format', 'json'], command.describe())
        return out, _last_line(err)

    def run_image(self, spec, args, what):
        """run('rbd', ...) for one image, with the same not-found wording as the bindings."""
        try:
            return self.run('rbd', args, what)
        except CephNotFoundError as exc:
            if 'error opening pool' in (exc.stderr or ''):
                exc.msg = 'pool %r does not exist (image %s): %s' % (spec.pool, spec, exc.msg)
            else:
                exc.msg = 'image %s does not exist%s: %s' % (
                    spec, ' (or namespace %r does not)' % spec.namespace if spec.namespace else '', exc.msg)
            raise

    def inspect_image(self, spec, metadata=True, locks=False):
        from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import json_document
        out, _err = self.run_image(spec, rbd_args(['status'], [str(spec)], ['--format', 'json']),
                                   'rbd status %s' % spec)
        status = json_document(out, 'rbd status %s' % spec, empty={})
        result = {'watchers': [dict(address=w['address'], client_id=int(w['client']), cookie=int(w['cookie']))
                               for w in status.get('watchers', [])]}
        if metadata:
            out, _err = self.run_image(spec, rbd_args(['image-meta', 'list'], [str(spec)], ['--format', 'json']),
                                       'rbd image-meta list %s' % spec)
            result['metadata'] = json_document(out, 'rbd image-meta list %s' % spec, empty={})
        if locks:
            result['locks'] = self.image_locks(spec)
        return result

    def image_locks(self, spec):
        from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import json_document
        out, _err = self.run_image(spec, rbd_args(['lock', 'ls'], [str(spec)], ['--format', 'json']),
                                   'rbd lock ls %s' % spec)
        listed = json_document(out, 'rbd lock ls %s' % spec, empty=[])
        if not listed:
            return dict(exclusive=None, tag=None, lockers=[])
        # The JSON form has no lock type or tag: the plain form does.
        text, _err = self.run('rbd', rbd_args(['lock', 'ls'], [str(spec)]), 'rbd lock ls %s' % spec)
        exclusive, tag = parse_lock_header(text)
        return dict(exclusive=exclusive, tag=tag,
                    lockers=[dict(locker=i['locker'], id=i['id'], address=i['address']) for i in listed])

    def lock_owners(self, spec):
        raise CephError('the rbd CLI has no counterpart of librbd\'s lock_get_owners, so %s was not asked; '
                        'exclusive_lock_owners (read from the lock list) still names the exclusive-lock owners; '
                        'backend=rados (the python3-rbd bindings) asks librbd' % spec)

    def break_lock(self, spec, locker, lock_id):
        # lock_id and locker come from the cluster (anyone can take a lock named --keyring=/x):
        # after `--` they can only be positionals (I9).
        self.run('rbd', rbd_args(['lock', 'rm'], [str(spec), lock_id, locker]),
                 'rbd lock rm %s %s %s' % (spec, shlex.quote(lock_id), shlex.quote(locker)))

    def add_lock(self, spec, lock_id, tag=None):
        self.run('rbd', rbd_args(['lock', 'add'], [str(spec), lock_id],
                                 ['--shared', check_name(tag, 'tag')] if tag is not None else []),
                 'rbd lock add %s %s' % (spec, shlex.quote(lock_id)))


def rbd_args(words, positionals, options=()):
    """`rbd <words> <options> -- <positionals>`: the rbd CLI (boost program_options) takes `--`
    as the end of options (tried on the lab: `rbd lock rm -- rbd/img --keyring=/x client.1`
    breaks the lock named --keyring=/x; without `--` it is read as --keyring), so image specs,
    lock ids and lockers, user- or cluster-given, never become options (I9). Options go before
    the `--` (after it they would be positionals too)."""
    return list(words) + list(options) + ['--'] + [str(p) for p in positionals]


_LOCK_HEADER = re.compile(r'^There (?:is|are) (\d+) (exclusive|shared) locks? on this image\.', re.M)
_LOCK_TAG = re.compile(r'^Lock tag: (.*)$', re.M)


def parse_lock_header(text):
    """(exclusive, tag) from plain `rbd lock ls` output; (None, None) without locks."""
    header = _LOCK_HEADER.search(text or '')
    if not header:
        return None, None
    tag = _LOCK_TAG.search(text)
    return header.group(2) == 'exclusive', (tag.group(1).strip() if tag else '')


# What the tools print when they cannot connect at all (an unreadable keyring among the causes):
# `ceph` "[errno 5] RADOS I/O error (error connecting to the cluster)" (rc 1), `rbd` "rbd: couldn't
# connect to the cluster!" (rc 5), both after "auth: failed to load <keyring>: (5) Input/output error".
_CONNECT_FAILURE_MARKERS = ('error connecting to the cluster', "couldn't connect to the cluster",
                            'failed to load', 'keyring not found')


def _looks_like_connect_failure(rc, err):
    return rc not in (0, -1) and any(marker in (err or '') for marker in _CONNECT_FAILURE_MARKERS)


def _last_line(text):
    summary = stderr_summary(text, limit=1)
    return summary


def _which(tool):
    for folder in os.environ.get('PATH', '').split(os.pathsep) + ['/usr/bin', '/usr/sbin', '/bin']:
        path = os.path.join(folder, tool)
        if folder and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _run(argv, timeout, env=None):
    """(rc, stdout, stderr); rc -1 when the process had to be killed at `timeout`.

    The call runs in its own session (so its own process group), and at the timeout the whole
    group is killed: with a command_prefix (`cephadm shell --`, `kubectl exec ... --`) the tool
    is a grandchild, which killing the direct child alone would leave running, holding stdout
    open and this call waiting (I8)."""
    # Not AnsibleModule.run_command: this runs from a bounded thread pool (parallel per-address
    # blocklisting) and must kill a hung tool at the timeout.
    try:
        # pylint: disable-next=ansible-bad-function
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, start_new_session=True, env=env)
    except OSError as exc:
        return 127, '', 'could not run %s: %s' % (argv[0], exc)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # The child is not reaped yet (at worst a zombie), so its pid, the group's id, cannot
        # have been reused: killing the group hits this call's processes only.
        kill_process_group(proc)
        try:
            out, err = proc.communicate(timeout=KILL_GRACE)
        except subprocess.TimeoutExpired:  # something left the group and holds the pipes
            proc.kill()
            return -1, '', 'killed at the timeout; a process that left its process group still holds its output'
        return -1, out, err
    return proc.returncode, out, err


KILL_GRACE = 5


def kill_process_group(proc):
    """SIGKILL every process of `proc`'s process group (it leads one: start_new_session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # already gone
        proc.kill()
