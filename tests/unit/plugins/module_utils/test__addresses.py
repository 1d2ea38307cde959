"""The one parser of user-given addresses and CIDRs (issue 17): messages in the user's words."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type


import ipaddress

import pytest

from ansible_collections.volfence.csi.plugins.module_utils._addresses import cidr_error, parse_each, parse_network
from ansible_collections.volfence.csi.plugins.module_utils._ceph.blocklist import Request, parse_protected
from ansible_collections.volfence.csi.plugins.module_utils._ceph.common import AddressMatcher, parse_addr, parse_cidr
from ansible_collections.volfence.csi.plugins.module_utils._ceph.rbd import NodeMap
from ansible_collections.volfence.csi.plugins.module_utils._decisions.networkfence import normalize_cidr

INJECTION = '10.0.0.1; rm -rf /'


@pytest.mark.parametrize('value, message', [
    ('1.2.3.4/33', "CIDR '1.2.3.4/33' is not a CIDR (prefix length 33 is out of range for IPv4: 0-32)"),
    ('fd00::/129', "CIDR 'fd00::/129' is not a CIDR (prefix length 129 is out of range for IPv6: 0-128)"),
    (INJECTION, "CIDR '10.0.0.1; rm -rf /' is not a CIDR ('10.0.0.1; rm -rf' is not an IP address)"),
    ('10.0.0.0/x', "CIDR '10.0.0.0/x' is not a CIDR (prefix length 'x' is not a number)"),
    ('10.0.0.0/255.0.255.0', "CIDR '10.0.0.0/255.0.255.0' is not a CIDR (netmask '255.0.255.0' is not a valid IPv4 "
                             "netmask)"),
    ('10.0.0.5/24', "CIDR '10.0.0.5/24' is ambiguous (host bits set): write 10.0.0.0/24 for the whole network, "
                    "or 10.0.0.5/32 for the single address"),
    ('10.0.0.5', "CIDR '10.0.0.5' has no prefix length (write 10.0.0.5/32 for that address alone)"),
    ('node-b', "CIDR 'node-b' is not an IP address (nor a CIDR such as 10.0.3.0/24)"),
    ('', 'CIDR is empty'),
    (5, "CIDR 5 is not an IP address or CIDR (it is a int, not a string)"),
])
def test_parse_network_says_what_is_wrong(value, message):
    with pytest.raises(ValueError) as info:
        parse_network(value)
    assert str(info.value) == message


def test_parse_network_accepts_networks_netmasks_and_bare_hosts_when_asked():
    assert parse_network('10.0.0.0/24') == ipaddress.ip_network(u'10.0.0.0/24')
    assert parse_network('10.0.0.0/255.255.255.0') == ipaddress.ip_network(u'10.0.0.0/24')
    assert parse_network(' fd00::/120 ') == ipaddress.ip_network(u'fd00::/120')
    assert parse_network('10.0.0.5', bare='host') == ipaddress.ip_network(u'10.0.0.5/32')
    assert parse_network('10.0.0.5/24', strict=False) == ipaddress.ip_network(u'10.0.0.0/24')
    assert cidr_error('10.0.0.5/24') is None


# Every option that takes addresses or CIDRs says the same thing about the same bad value.
@pytest.mark.parametrize('parse, expected', [
    (lambda v: Request([v], []), "address '%s' is not an IP address"),
    (lambda v: Request([], [v]), "CIDR '%s' is not a CIDR ("),
    (lambda v: parse_protected([v]), "protect_addresses '%s' is not an IP address"),
    (lambda v: AddressMatcher([v], 'match'), "match '%s' is not an IP address"),
    (lambda v: AddressMatcher([v], 'exclude_addresses'), "exclude_addresses '%s' is not an IP address"),
    (lambda v: NodeMap({'node-b': [v]}), "node_addresses['node-b'] '%s' is not an IP address"),
    (normalize_cidr, "CIDR '%s' is not a CIDR ("),
    (parse_cidr, "CIDR '%s' is not a CIDR ("),
])
def test_every_address_option_calls_a_shell_injection_not_an_ip_address(parse, expected):
    with pytest.raises(ValueError) as info:
        parse(INJECTION)
    assert expected % INJECTION in str(info.value)
    assert 'is not an IP address' in str(info.value)
    assert 'ambiguous' not in str(info.value)


@pytest.mark.parametrize('parse, expected', [
    (lambda v: Request([v], []), "address '1.2.3.4/33' is not an IP address, and not a CIDR (prefix length 33 is "
                                 "out of range for IPv4: 0-32)"),
    (lambda v: Request([], [v]), "CIDR '1.2.3.4/33' is not a CIDR (prefix length 33 is out of range for IPv4"),
    (lambda v: parse_protected([v]), "protect_addresses '1.2.3.4/33' is not an IP address, and not a CIDR "
                                     "(prefix length 33"),
    (lambda v: AddressMatcher([v], 'match'), "match '1.2.3.4/33' is not an IP address, and not a CIDR (prefix "
                                             "length 33"),
    (lambda v: NodeMap({'n': [v]}), "node_addresses['n'] '1.2.3.4/33' is not an IP address, and not a CIDR"),
    (normalize_cidr, "CIDR '1.2.3.4/33' is not a CIDR (prefix length 33 is out of range for IPv4"),
])
def test_every_address_option_calls_prefix_33_not_a_cidr(parse, expected):
    with pytest.raises(ValueError) as info:
        parse('1.2.3.4/33')
    assert expected in str(info.value)
    assert 'ambiguous' not in str(info.value)


def test_host_bits_stay_ambiguous_and_a_network_where_an_address_belongs_too():
    with pytest.raises(ValueError, match=r"CIDR '10.0.0.5/24' is ambiguous \(host bits set\)"):
        Request([], ['10.0.0.5/24'])
    with pytest.raises(ValueError, match=r"CIDR '10.0.0.5/24' is ambiguous \(host bits set\)"):
        normalize_cidr('10.0.0.5/24')
    with pytest.raises(ValueError, match=r"address '10.0.0.0/24' is ambiguous \(a network where one address"):
        parse_addr('10.0.0.0/24')
    # where a network is welcome, host bits only widen protection
    assert parse_protected(['10.0.0.5/24'])[0][1] == ipaddress.ip_network(u'10.0.0.0/24')
    assert NodeMap({'n': ['10.0.0.5/24', '10.0.1.7:0/123']}).entries[1][1] == ipaddress.ip_network(u'10.0.1.7/32')


def test_parse_each_keeps_the_order_says_each_value_once_and_names_every_bad_entry():
    parsed, errors = parse_each(['10.0.0.2/32', 'x', '10.0.0.1/32', '10.0.0.2/32', '1.2.3.4/33'], parse_network)
    assert [str(n) for n in parsed] == ['10.0.0.2/32', '10.0.0.1/32']
    assert len(errors) == 2 and "'x'" in errors[0] and "'1.2.3.4/33'" in errors[1]
    assert parse_each(None, parse_network) == ([], [])
