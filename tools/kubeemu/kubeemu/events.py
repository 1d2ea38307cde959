"""events.k8s.io/v1 Events: one storage with core/v1 Events, as in the API server.

The API server stores one Event type and serves it in both groups (kubernetes/kubernetes
pkg/registry/core/event, pkg/apis/events/v1/conversion.go): an Event created through events.k8s.io/v1
is listed by `kubectl get events` and `kubectl describe` (core/v1), with these fields renamed:

    events.k8s.io/v1            core/v1
    regarding                   involvedObject
    note                        message
    reportingController         reportingComponent   (the same Go field, another JSON name)
    deprecatedSource            source
    deprecatedFirstTimestamp    firstTimestamp
    deprecatedLastTimestamp     lastTimestamp
    deprecatedCount             count

Everything else (metadata, eventTime, series, related, action, reason, type, reportingInstance) keeps
its name.

A create through events.k8s.io/v1 is validated as pkg/apis/core/validation/events.go's
ValidateEventCreate does for that group: the legacy checks, then eventTime required, type Normal or
Warning, no firstTimestamp/lastTimestamp/count/source, reportingController a qualified name,
reportingInstance, action and reason required and at most 128 characters, note at most 1024, and the
Event of a cluster-scoped object (no regarding.namespace) in namespace default or kube-system.

Stricter than the API server: update and patch through events.k8s.io/v1 are refused (405); nothing
the collection or its tests do needs them.
"""

import copy
import re
from datetime import datetime, timezone

# events.k8s.io/v1 name -> core/v1 name (pkg/apis/events/v1/conversion.go)
RENAMED = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
CORE_NAMES = dict((core, v1) for v1, core in RENAMED.items())

# pkg/apis/core/validation/events.go
REPORTING_INSTANCE_LIMIT = 128
ACTION_LIMIT = 128
REASON_LIMIT = 128
NOTE_LIMIT = 1024

# k8s.io/apimachinery/pkg/util/validation IsQualifiedName: an optional DNS-subdomain prefix and '/',
# then a name of at most 63 characters
_QUALIFIED_NAME = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                             r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


# k8s.io/apimachinery/pkg/apis/meta/v1/micro_time.go: a MicroTime is read with time.Parse(RFC3339Micro),
# which needs the six fraction digits ("2006-01-02T15:04:05.000000Z07:00"), and written in UTC with them.
_MICRO_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{6})(Z|[+-]\d{2}:\d{2})$")


def micro_time(value):
    """`value` as the API server stores a MicroTime (UTC, six fraction digits), or ValueError in its words."""
    match = _MICRO_TIME.match(value) if isinstance(value, str) else None
    if not match:
        raise ValueError('parsing time "%s" as "2006-01-02T15:04:05.000000Z07:00": cannot parse' % (value,))
    zone = "+00:00" if match.group(3) == "Z" else match.group(3)
    moment = datetime.strptime(match.group(1) + match.group(2) + zone.replace(":", ""), "%Y-%m-%dT%H:%M:%S%f%z")
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def with_micro_times(event):
    """`event` with its MicroTimes (eventTime, series.lastObservedTime) as the API server stores them;
    ValueError for one it cannot read."""
    event = copy.deepcopy(event)
    if event.get("eventTime"):
        event["eventTime"] = micro_time(event["eventTime"])
    series = event.get("series")
    if isinstance(series, dict) and series.get("lastObservedTime"):
        series["lastObservedTime"] = micro_time(series["lastObservedTime"])
    return event


def to_core(event):
    """The core/v1 form of an events.k8s.io/v1 Event (a new dict)."""
    out = {}
    for key, value in event.items():
        out[RENAMED.get(key, key)] = copy.deepcopy(value)
    return out


def from_core(event, api_version="events.k8s.io/v1"):
    """The events.k8s.io/v1 form of a stored (core/v1) Event (a new dict)."""
    out = {}
    for key, value in event.items():
        out[CORE_NAMES.get(key, key)] = copy.deepcopy(value)
    out["apiVersion"] = api_version
    return out


def field_selector_to_core(selector):
    """An events.k8s.io/v1 field selector on the stored form (regarding.name -> involvedObject.name)."""
    if not selector:
        return selector
    parts = []
    for part in selector.split(","):
        for v1, core in RENAMED.items():
            if part.startswith(v1 + ".") or re.match(r"^%s(!=|==|=)" % re.escape(v1), part):
                part = core + part[len(v1):]
                break
        parts.append(part)
    return ",".join(parts)


def create_problems(event, namespace):
    """[(field, reason, message)] of ValidateEventCreate for an events.k8s.io/v1 Event `event`; the fields are
    named as the API server names them (it validates the internal, core-shaped Event: involvedObject,
    message, firstTimestamp ...)."""
    problems = []
    regarding = event.get("regarding") or {}
    if not event.get("eventTime"):
        problems.append(("eventTime", "FieldValueRequired", "Required value"))
    if event.get("type") not in ("Normal", "Warning"):
        problems.append(("type", "FieldValueInvalid", 'Invalid value: "": has invalid value: %s' % event.get("type")))
    for field in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp"):
        if event.get(field):
            problems.append((RENAMED[field], "FieldValueInvalid", 'Invalid value: "": needs to be unset'))
    if event.get("deprecatedCount"):
        problems.append(("count", "FieldValueInvalid", 'Invalid value: "": needs to be unset'))
    source = event.get("deprecatedSource") or {}
    if source.get("component") or source.get("host"):
        problems.append(("source", "FieldValueInvalid", 'Invalid value: "": needs to be unset'))
    if not regarding.get("namespace") and namespace not in ("default", "kube-system"):
        problems.append(("involvedObject.namespace", "FieldValueInvalid",
                         'Invalid value: "": does not match event.namespace'))
    elif regarding.get("namespace") and regarding.get("namespace") != namespace:
        # stricter than the API server, which checks this only for an Event without eventTime: the
        # Event of a namespaced object lives in that object's namespace
        problems.append(("involvedObject.namespace", "FieldValueInvalid",
                         'Invalid value: "%s": does not match event.namespace' % regarding.get("namespace")))
    controller = event.get("reportingController") or ""
    if not controller:
        problems.append(("reportingController", "FieldValueRequired", "Required value"))
    elif not _QUALIFIED_NAME.match(controller):
        problems.append(("reportingController", "FieldValueInvalid",
                         'Invalid value: "%s": must be a qualified name' % controller))
    for field, limit in (("reportingInstance", REPORTING_INSTANCE_LIMIT), ("action", ACTION_LIMIT),
                         ("reason", REASON_LIMIT)):
        value = event.get(field) or ""
        if not value:
            problems.append((field, "FieldValueRequired", "Required value"))
        elif len(value) > limit:
            problems.append((field, "FieldValueInvalid",
                             'Invalid value: "": can have at most %d characters' % limit))
    if len(event.get("note") or "") > NOTE_LIMIT:
        problems.append(("message", "FieldValueInvalid", 'Invalid value: "": can have at most %d characters' % NOTE_LIMIT))
    return problems
