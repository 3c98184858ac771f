"""Model: Metacontroller's in-place update decision, re-stated from its documented behaviour.

The fast tiers cannot start the real Metacontroller (v4.17.2, dynamic apply) for
every generated world, so they carry the one piece of it they need: given the
observed child and the desired one, what object would it send, and would it send
anything at all? Every child the hooks return must come out of ``needs_update``
as False against what the API server stored, or Metacontroller writes it on every
sync. ``tests/e2e/test_model.py`` holds this model to the real binary.
"""

from __future__ import annotations

import copy
import json
from typing import Any

Obj = dict[str, Any]

LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"
FINALIZER = "metacontroller.io/compositecontroller-sharddb"
SELECTOR_LABEL = "controller-uid"  # the CompositeController sets generateSelector: true

# A list of objects merges item by item only if every item of all three lists has
# one of these keys (the first one they all have wins); otherwise it is replaced.
LIST_MAP_KEYS = ("containerPort", "port", "mountPath", "name", "uid", "ip", "path")

# Metadata the server owns: a desired object can never change these.
SYSTEM_METADATA = (
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "generation",
    "managedFields",
    "resourceVersion",
    "selfLink",
    "uid",
)


def three_way_merge(observed: Any, last: Any, desired: Any) -> Any:
    """Desired over observed; what ``last`` had and ``desired`` dropped is removed.

    Maps merge key by key; lists of objects with a common key merge item by item;
    any other list, and every scalar, is simply the desired value.
    """
    if isinstance(observed, dict) and isinstance(desired, dict):
        previous = last if isinstance(last, dict) else {}
        merged = {k: v for k, v in observed.items() if not (k in previous and k not in desired)}
        for key, value in desired.items():
            merged[key] = three_way_merge(observed.get(key), previous.get(key), value)
        return merged
    if isinstance(observed, list) and isinstance(desired, list):
        previous_list = last if isinstance(last, list) else []
        key = _list_map_key(observed, previous_list, desired)
        if key is None:
            return copy.deepcopy(desired)
        return _merge_list_map(key, observed, previous_list, desired)
    return copy.deepcopy(desired)


def _list_map_key(*lists: list[Any]) -> str | None:
    common: set[str] | None = None
    for items in lists:
        for item in items:
            if not isinstance(item, dict):
                return None
            common = set(item) if common is None else common & set(item)
    return next((key for key in LIST_MAP_KEYS if common and key in common), None)


def _merge_list_map(key: str, observed: list[Obj], last: list[Obj], desired: list[Obj]) -> list[Obj]:
    def by_key(items: list[Obj]) -> dict[str, Obj]:
        return {str(item[key]): item for item in items}

    merged = three_way_merge(by_key(observed), by_key(last), by_key(desired))
    order = [str(item[key]) for item in observed] + [str(item[key]) for item in desired]
    return [merged[k] for k in dict.fromkeys(order) if k in merged]


def serialize(obj: Obj) -> str:
    """The last-applied annotation's text, as Go's encoding/json writes a map: sorted keys, HTML escaped."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def last_applied(observed: Obj) -> Obj:
    raw = observed.get("metadata", {}).get("annotations", {}).get(LAST_APPLIED)
    return json.loads(raw) if raw else {}


def desired_as_sent(desired: Obj, namespace: str, parent_uid: str) -> Obj:
    """The hook's child as Metacontroller completes it: namespace and the selector label."""
    child = copy.deepcopy(desired)
    meta = child.setdefault("metadata", {})
    meta["namespace"] = namespace
    meta.setdefault("labels", {}).setdefault(SELECTOR_LABEL, parent_uid)
    return child


def for_create(desired: Obj, owner: Obj) -> Obj:
    """What Metacontroller POSTs for a new child: the desired object, owned, remembering itself."""
    created = copy.deepcopy(desired)
    meta = created["metadata"]
    meta["ownerReferences"] = [owner]
    meta.setdefault("annotations", {})[LAST_APPLIED] = serialize(desired)
    return created


def apply_update(observed: Obj, desired: Obj) -> Obj:
    """The object Metacontroller would PUT for ``desired`` over ``observed``."""
    merged: Obj = three_way_merge(observed, last_applied(observed), desired)
    meta = merged.setdefault("metadata", {})
    for name in SYSTEM_METADATA:
        if name in observed.get("metadata", {}):
            meta[name] = observed["metadata"][name]
        else:
            meta.pop(name, None)
    if "status" in observed:
        merged["status"] = observed["status"]
    else:
        merged.pop("status", None)
    meta.setdefault("annotations", {})[LAST_APPLIED] = serialize(desired)
    return merged


def needs_update(observed: Obj, desired: Obj) -> bool:
    """Would Metacontroller send an Update? Any difference at all, the annotation included."""
    return apply_update(observed, desired) != observed


def difference(observed: Obj, desired: Obj) -> list[str]:
    """Paths where the update would differ from the stored object, for a readable failure."""
    return _diff(observed, apply_update(observed, desired), "")


def _diff(before: Any, after: Any, path: str) -> list[str]:
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            out.extend(_diff(before.get(key, "<absent>"), after.get(key, "<absent>"), f"{path}.{key}"))
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        pairs = enumerate(zip(before, after, strict=True))
        return [line for i, (a, b) in pairs for line in _diff(a, b, f"{path}[{i}]")]
    return [] if before == after else [f"{path}: stored {json.dumps(before)} -> sent {json.dumps(after)}"]
