"""Small, generic conversions from protobuf messages and enums to plain Python values."""

import dataclasses
from typing import Any, Dict, Optional

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message


def enum_name(enum_type: Any, value: int) -> Optional[str]:
    """`STRATEGY_BRANCH_SAMPLE` → "branch_sample"; None for the UNSPECIFIED (zero) value.

    The prefix is the zero value's name without "UNSPECIFIED", so every Arbor enum (all start
    with X_UNSPECIFIED = 0) converts the same way. A value this client does not know yet (a
    newer server) reads as "unknown_<n>" rather than failing the whole call.
    """
    if value == 0:
        return None
    prefix = enum_type.Name(0)[: -len("UNSPECIFIED")]
    try:
        return enum_type.Name(value)[len(prefix):].lower()
    except ValueError:
        return f"unknown_{value}"


def enum_value(enum_type: Any, name: str) -> int:
    """The inverse of enum_name: "running" → JOB_STATE_RUNNING. ValueError when unknown."""
    prefix = enum_type.Name(0)[: -len("UNSPECIFIED")]
    full = name if name.upper().startswith(prefix) else prefix + name.upper()
    try:
        return enum_type.Value(full.upper())
    except ValueError:
        names = [n[len(prefix):].lower() for n in enum_type.keys()[1:]]
        raise ValueError(f"{name!r} is not one of {', '.join(names)}") from None


def scalar_fields(message: Message) -> Dict[str, Any]:
    """Every field of a message of scalars, by name, zero values included.

    Used for Metrics and StrategyCounts, which are read by name (`metrics["entropy"]`): fields a
    newer server adds appear without a client change.
    """
    return {field.name: getattr(message, field.name) for field in message.DESCRIPTOR.fields}


def _is_repeated(field: FieldDescriptor) -> bool:
    """Whether a message field is repeated, on every protobuf runtime: `is_repeated` from 5.x
    on, `label` before it (protobuf 7 removed `label`)."""
    is_repeated = getattr(field, "is_repeated", None)
    if is_repeated is not None:
        return bool(is_repeated)
    return field.label == FieldDescriptor.LABEL_REPEATED


def from_message(cls: Any, message: Message, **converted: Any) -> Any:
    """A dataclass `cls` filled from the message's fields of the same names.

    Fields named in `converted` (nested messages, enums) take the given value; the others are
    copied, repeated fields as lists. Fields the message has and `cls` lacks are ignored, so a
    newer server's additions do not break an older client.
    """
    values = {}
    descriptors = message.DESCRIPTOR.fields_by_name
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        if field.name in converted:
            values[field.name] = converted[field.name]
        elif _is_repeated(descriptors[field.name]):
            values[field.name] = list(getattr(message, field.name))
        else:
            values[field.name] = getattr(message, field.name)
    return cls(**values)
