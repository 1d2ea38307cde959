# -*- coding: utf-8 -*-
# Copyright: (c) 2026, volfence.csi maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one parser of image specs (_ceph_client.parse_image_spec) and the options that name one
image (image_spec_of: `image_spec`, or `pool`, `namespace` and `image`), as properties over any
text: a spec is taken exactly when it is pool/image or pool/namespace/image with valid names, and
then names the same image as its parts do."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.volfence.csi.tests.unit.plugins.module_utils.search_depth import examples
from ansible_collections.volfence.csi.plugins.module_utils._ceph.client import (
    ImageSpec,
    image_spec,
    image_spec_of,
    parse_image_spec,
)

PROPERTY = settings(max_examples=examples(500), deadline=None, derandomize=True, database=None)

# A name Ceph and the rbd tool take: no '/', '@' (snapshots) or whitespace, not an option (I9).
NAMES = st.from_regex(r'\A[^/@\s\-][^/@\s]{0,15}\Z')
# Text around the separators, names or not: dashes, spaces, '@', empty parts.
PIECES = st.one_of(NAMES, st.sampled_from(['', ' ', '-x', '--keyring=k', 'img@snap', 'a b', '\t', '@']),
                   st.text(max_size=6))
SPEC_LIKE = st.lists(PIECES, min_size=1, max_size=5).map('/'.join)


def _valid(part):
    return bool(re.match(r'\A[^/@\s\-][^/@\s]*\Z', part))


@PROPERTY
@given(pool=NAMES, namespace=st.one_of(st.just(''), NAMES), image=NAMES)
def test_a_spec_names_the_image_its_parts_name(pool, namespace, image):
    text = '/'.join(p for p in (pool, namespace, image) if p)
    spec = parse_image_spec(text)
    assert (spec.pool, spec.namespace, spec.image) == (pool, namespace, image)
    assert str(spec) == text and spec == image_spec(pool, namespace, image)
    assert image_spec_of(dict(image_spec=text)) == image_spec_of(dict(pool=pool, namespace=namespace, image=image))
    assert parse_image_spec(str(spec)) == spec


@PROPERTY
@given(text=st.one_of(SPEC_LIKE, st.text(max_size=30)))
def test_any_text_is_a_spec_or_a_clear_error(text):
    parts = text.strip().split('/')
    well_formed = len(parts) in (2, 3) and all(_valid(p) for p in parts)
    try:
        spec = parse_image_spec(text, 'image_spec')
    except ValueError as exc:
        assert not well_formed
        msg = str(exc)
        assert msg.startswith('image_spec') and msg.endswith('nothing was changed')
        assert 'pool/image or pool/namespace/image' in msg or 'starts with "-"' in msg
        return
    assert well_formed
    assert str(spec) == text.strip()
    assert not any(p.startswith('-') for p in (spec.pool, spec.namespace, spec.image))


@PROPERTY
@given(parts=st.lists(NAMES, min_size=2, max_size=3), which=st.integers(0, 2), option=st.sampled_from(['-', '--']))
def test_a_part_that_is_an_option_is_refused_by_name(parts, which, option):
    """I9: whichever part starts with '-', the spec is refused, naming that part."""
    which = min(which, len(parts) - 1)
    parts[which] = option + parts[which]
    with pytest.raises(ValueError) as refused:
        parse_image_spec('/'.join(parts), 'image_spec')
    names = ('pool', 'namespace', 'image') if len(parts) == 3 else ('pool', 'image')
    assert 'starts with "-"' in str(refused.value) and ': %s ' % names[which] in str(refused.value)


def test_the_options_name_one_image_or_none():
    assert image_spec_of(dict(image_spec=None, pool=None, namespace='', image=None)) is None
    assert image_spec_of(dict(image_spec='rbd/ns/img')) == ImageSpec('rbd', 'ns', 'img')
    assert image_spec_of(dict(pool='rbd', namespace='', image='img')) == ImageSpec('rbd', '', 'img')
    # as the rbd tool takes it: image=pool/image, image=pool/namespace/image
    assert image_spec_of(dict(pool=None, namespace='', image='rbd/img')) == ImageSpec('rbd', '', 'img')
    assert image_spec_of(dict(image='rbd/ns/img')) == ImageSpec('rbd', 'ns', 'img')
    with pytest.raises(ValueError, match="image img needs its pool: give image=<pool>/img"):
        image_spec_of(dict(image='img'))
    with pytest.raises(ValueError, match="image rbd/img already names its pool"):
        image_spec_of(dict(pool='rbd', image='rbd/img'))
    with pytest.raises(ValueError, match="pool rbd needs image"):
        image_spec_of(dict(pool='rbd', image=None))
    with pytest.raises(ValueError, match=r"image_spec 'rbd/a/b/c' must be pool/image or pool/namespace/image"):
        image_spec_of(dict(image_spec='rbd/a/b/c'))


def test_an_image_name_that_is_an_option_is_refused_as_one_whatever_its_slashes():
    with pytest.raises(ValueError, match='is not a valid name|starts with "-"'):
        image_spec_of(dict(pool='rbd', image='--keyring=/tmp/x'))
    with pytest.raises(ValueError, match='starts with "-"'):
        image_spec_of(dict(image='rbd/--keyring=x'))
