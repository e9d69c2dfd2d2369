"""NVML telemetry (SM clock, power, temperature) sampled in a thread during a measurement.

Uses ``pynvml`` (package ``nvidia-ml-py``). Where NVML is missing (no GPU, CPU test kernels) the
sampler records nothing and every summary field is ``None``. NVML numbers GPUs its own way,
whatever ``CUDA_VISIBLE_DEVICES`` says, so a CUDA device is found in NVML by its UUID.

Power is the board's instantaneous draw where the driver reports it (``power_source``
"instant", NVML field ``NVML_FI_DEV_POWER_INSTANT``). Otherwise it is
``nvmlDeviceGetPowerUsage`` ("average"). On Ampere and newer GPUs that call returns the mean
over the last second, longer than one kernel's timing round (0.125 s by default: ``--min-time``
0.5 over 4 rounds), so its watts partly belong to whatever ran before.
"""

from __future__ import annotations

import os
import statistics
import threading
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "Telemetry",
    "TelemetrySampler",
    "cuda_uuid",
    "nvml_device_info",
    "power_reader",
    "torch_pci_bus_id",
]


@dataclass(frozen=True)
class Telemetry:
    samples: int
    sm_clock_mhz_mean: float | None = None
    sm_clock_mhz_min: float | None = None
    sm_clock_mhz_max: float | None = None
    power_w_mean: float | None = None
    power_w_max: float | None = None
    temp_c_max: float | None = None
    #: "instant" or "average" (NVML's one-second mean), the reading ``power_w_*`` come from;
    #: None in records written before it was recorded (those are "average").
    power_source: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def cuda_uuid(index: int = 0) -> str | None:
    """The UUID of torch's CUDA device ``index`` as nvidia-smi and NVML spell it
    (``GPU-...``), or None where torch does not say."""
    try:
        import torch

        uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    except Exception:
        return None
    if uuid is None:
        return None
    text = str(uuid)
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"


def torch_pci_bus_id(props: Any) -> str | None:
    """``domain:bus:device.0`` (nvidia-smi's spelling) from torch device properties, or None."""
    domain, bus, device = (getattr(props, f"pci_{k}_id", None) for k in ("domain", "bus", "device"))
    if bus is None:
        return None
    return f"{domain or 0:08X}:{bus:02X}:{device or 0:02X}.0"


def _nvml_handle(index: int) -> Any:
    """NVML's handle of torch's CUDA device ``index``, found by UUID (by the index that
    ``CUDA_VISIBLE_DEVICES`` maps it to where no UUID is known); None without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        uuid = cuda_uuid(index)
        if uuid is not None:
            return pynvml.nvmlDeviceGetHandleByUUID(uuid)
        visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")]
        if index < len(visible) and visible[index].isdigit():
            index = int(visible[index])
        return pynvml.nvmlDeviceGetHandleByIndex(index)
    except Exception:
        return None


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def nvml_device_info(index: int = 0) -> dict[str, Any]:
    """Driver version, power limit, max clocks and the GPU's identity (UUID, serial, PCI bus
    id), or an empty dict without NVML."""
    handle = _nvml_handle(index)
    if handle is None:
        return {}
    import pynvml

    info: dict[str, Any] = {}
    for key, fn in (
        ("uuid", lambda: pynvml.nvmlDeviceGetUUID(handle)),
        ("serial", lambda: pynvml.nvmlDeviceGetSerial(handle)),
        ("pci_bus_id", lambda: _text(pynvml.nvmlDeviceGetPciInfo(handle).busId)),
        ("driver", lambda: pynvml.nvmlSystemGetDriverVersion()),
        ("power_limit_w", lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0),
        (
            "max_sm_clock_mhz",
            lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM),
        ),
        (
            "max_mem_clock_mhz",
            lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM),
        ),
    ):
        try:
            info[key] = _text(fn())
        except Exception:
            info[key] = None
    return info


#: nvml.h's ``NVML_FI_DEV_POWER_INSTANT``, for an ``nvidia-ml-py`` too old to name it.
_FI_POWER_INSTANT = 186
#: Readings outside this range (watts) mean the field is not what it claims to be.
_PLAUSIBLE_W = (1.0, 5000.0)


def _field_number(value: Any) -> float | None:
    """The number in an NVML field value (``c_nvmlFieldValue_t``), None if it failed."""
    import pynvml

    if value.nvmlReturn != pynvml.NVML_SUCCESS:
        return None
    # nvmlValueType_t: double, unsigned int, unsigned long, unsigned long long, signed long
    # long, signed int, unsigned short.
    members = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
    member = members.get(value.valueType)
    return float(getattr(value.value, member)) if member else None


def power_reader(handle: Any) -> tuple[Any, str] | None:
    """A function returning the board's power in watts, and its source: the instantaneous
    field where the driver answers it with a plausible number, else NVML's one-second
    average; None without NVML."""
    if handle is None:
        return None
    import pynvml

    field = getattr(pynvml, "NVML_FI_DEV_POWER_INSTANT", _FI_POWER_INSTANT)

    def instant() -> float:
        watts = _field_number(pynvml.nvmlDeviceGetFieldValues(handle, [field])[0])
        if watts is None:
            raise RuntimeError("NVML_FI_DEV_POWER_INSTANT unavailable")
        return watts / 1000.0

    try:
        if _PLAUSIBLE_W[0] <= instant() <= _PLAUSIBLE_W[1]:
            return instant, "instant"
    except Exception:
        pass
    return (lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0), "average"


class TelemetrySampler:
    """Context manager sampling NVML every ``interval_s`` while the body runs."""

    def __init__(self, device_index: int = 0, interval_s: float = 0.02, enabled: bool = True):
        self._handle = _nvml_handle(device_index) if enabled else None
        reader = power_reader(self._handle)
        self._power_w, self._power_source = reader if reader else (None, None)
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._clock: list[float] = []
        self._power: list[float] = []
        self._temp: list[float] = []

    def _sample(self) -> None:
        import pynvml

        h = self._handle
        while True:
            try:
                self._clock.append(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))
                self._temp.append(pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU))
            except Exception:
                return
            try:  # a power reading that fails once costs that sample, not the clocks
                self._power.append(self._power_w())
            except Exception:
                pass
            if self._stop.wait(self._interval):
                return

    def __enter__(self) -> TelemetrySampler:
        if self._handle is not None:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)

    def summary(self) -> Telemetry:
        if not self._clock:
            return Telemetry(samples=0)
        return Telemetry(
            samples=len(self._clock),
            sm_clock_mhz_mean=statistics.fmean(self._clock),
            sm_clock_mhz_min=min(self._clock),
            sm_clock_mhz_max=max(self._clock),
            power_w_mean=statistics.fmean(self._power) if self._power else None,
            power_w_max=max(self._power) if self._power else None,
            temp_c_max=max(self._temp) if self._temp else None,
            power_source=self._power_source if self._power else None,
        )


def merge(parts: list[Telemetry]) -> Telemetry:
    """Combine the telemetry of several measurement rounds (sample-weighted means)."""
    parts = [p for p in parts if p.samples]
    if not parts:
        return Telemetry(samples=0)
    n = sum(p.samples for p in parts)

    def wmean(field: str) -> float | None:
        vals = [(getattr(p, field), p.samples) for p in parts if getattr(p, field) is not None]
        return sum(v * w for v, w in vals) / sum(w for _, w in vals) if vals else None

    def agg(field: str, fn: Any) -> float | None:
        vals = [getattr(p, field) for p in parts if getattr(p, field) is not None]
        return fn(vals) if vals else None

    return Telemetry(
        samples=n,
        sm_clock_mhz_mean=wmean("sm_clock_mhz_mean"),
        sm_clock_mhz_min=agg("sm_clock_mhz_min", min),
        sm_clock_mhz_max=agg("sm_clock_mhz_max", max),
        power_w_mean=wmean("power_w_mean"),
        power_w_max=agg("power_w_max", max),
        temp_c_max=agg("temp_c_max", max),
        power_source=_common_source(parts),
    )


def _common_source(parts: list[Telemetry]) -> str | None:
    """The parts' power source, "mixed" where they differ, None where none recorded one."""
    sources = {p.power_source for p in parts if p.power_w_mean is not None}
    if not sources or sources == {None}:
        return None
    return sources.pop() if len(sources) == 1 else "mixed"
