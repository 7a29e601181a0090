"""Device specifications ("/job:localhost/replica:0/task:0/device:CPU:1", "/cpu:1") and
how nested device scopes merge."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class DeviceSpec:
    """A possibly partial device name; unset parts are None."""

    job: str | None = None
    replica: int | None = None
    task: int | None = None
    device_type: str | None = None
    device_index: int | None = None

    @classmethod
    def from_string(cls, spec: str | None) -> DeviceSpec:
        """Parse TF's device-name syntax; ValueError in TF's words for a malformed name
        (an unknown attribute, or more than one device type)."""
        if not spec:
            return cls()
        return _parse(spec) if cls is DeviceSpec else cls(**_parse(spec).__dict__)

    def to_string(self) -> str:
        """The canonical form TF writes in NodeDef.device."""
        out = ""
        if self.job is not None:
            out += f"/job:{self.job}"
        if self.replica is not None:
            out += f"/replica:{self.replica}"
        if self.task is not None:
            out += f"/task:{self.task}"
        if self.device_type is not None:
            index = "*" if self.device_index is None else str(self.device_index)
            out += f"/device:{self.device_type}:{index}"
        return out

    def make_merged_spec(self, other: DeviceSpec) -> DeviceSpec:
        """This spec with every part `other` sets taken from `other` (inner scope wins)."""
        changes = {k: v for k, v in other.__dict__.items() if v is not None}
        if "device_type" in changes and "device_index" not in changes:
            changes["device_index"] = None
        return replace(self, **changes)

    def is_compatible_with(self, other: DeviceSpec) -> bool:
        """Whether no part set in both differs (so `other` could satisfy this spec)."""
        return all(
            a is None or b is None or a == b
            for a, b in zip(self.__dict__.values(), other.__dict__.values(), strict=True)
        )

    def __str__(self) -> str:
        return self.to_string()


@functools.lru_cache(maxsize=4096)
def _parse(spec: str) -> DeviceSpec:
    """The parsed spec, cached as TF caches it: a graph names few distinct devices."""
    fields: dict = {}
    for part in spec.split("/"):
        if part:
            _parse_part(part, spec, fields)
    return DeviceSpec(**fields)


def _parse_part(part: str, spec: str, fields: dict) -> None:
    """One "/"-separated part of `spec` into `fields` (job, replica, task, device)."""
    bits = part.split(":")
    key = bits[0].lower()
    if key == "job" and len(bits) == 2 and bits[1]:
        fields["job"] = bits[1]
    elif key in ("replica", "task") and len(bits) == 2 and bits[1].isdigit():
        fields[key] = int(bits[1])
    elif key == "device" and len(bits) in (2, 3):
        _set_device(fields, spec, bits[1], bits[2] if len(bits) == 3 else "*")
    elif len(bits) in (1, 2) and key in ("cpu", "gpu", "tpu", "xla_cpu", "xla_gpu"):
        _set_device(fields, spec, bits[0], bits[1] if len(bits) == 2 else "*")
    else:
        raise ValueError(f"Unknown attribute '{bits[0]}' is encountered while parsing the "
                         f"device spec: '{spec}'.")


def _set_device(fields: dict, spec: str, device_type: str, index: str) -> None:
    if "device_type" in fields:
        raise ValueError(f"Multiple device types are not allowed while parsing the device "
                         f"spec: {spec}.")
    fields["device_type"] = _type_name(device_type)
    if index != "*":
        fields["device_index"] = _index(index, spec)


def _type_name(name: str) -> str:
    return name.upper() if name.lower() in ("cpu", "gpu", "tpu", "xla_cpu", "xla_gpu") else name


def _index(text: str, spec: str) -> int:
    if not text.isdigit():
        raise ValueError(f"Unknown device index '{text}' in '{spec}'")
    return int(text)


def canonical(spec: str | None) -> str:
    """Normalise a device string ("/cpu:0" -> "/device:CPU:0")."""
    return DeviceSpec.from_string(spec).to_string()


def merge_device(outer: str, inner: str) -> str:
    """Merge a nested device scope into its enclosing one, as TF 1.x does."""
    return DeviceSpec.from_string(outer).make_merged_spec(DeviceSpec.from_string(inner)).to_string()
