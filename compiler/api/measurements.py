"""GoodputMeasurement and BandwidthMeasurement: numbers read from a Job's workload logs.

A Job creates the measurements it asks for; each one points back at the Job and at a
LogProfile. Measured numbers are decimal strings, as the controller writes them.
Bandwidth results are provisional while the Job runs and final after one full read of the
launcher log. ``status.transport`` records which NCCL network carried the collective; no
verdict reads it. ``status.failure`` says why the run's numbers are not a measurement whatever
their value (corrupted data, a failed run, a table that never finished); the Job is then failed
with that reason.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field

from .common import (
    ApiModel,
    ApiObject,
    Conditions,
    Duration,
    Int32,
    Int64,
    Name,
    PrinterColumn,
    ShortString,
    Time,
    TypedLocalObjectReference,
)
from .markers import Crd


class GoodputMeasurementSpec(ApiModel):
    """Which Job's log to read, with which profile."""

    job_ref: TypedLocalObjectReference
    log_profile_ref: Name
    sample_interval: Optional[Duration] = None


class BandwidthMeasurementSpec(GoodputMeasurementSpec):
    """Which Job's launcher log to read, with which profile, for which NCCL test."""

    test_type: Optional[ShortString] = None


class PendingInterruption(ApiModel):
    """An interruption seen but not yet accounted for."""

    t_checkpoint: Optional[Time] = None
    t_interrupt: Optional[Time] = None
    checkpoint_step: Optional[Int64] = None
    last_step: Optional[Int64] = None
    t_ch: Optional[str] = None
    reason: Optional[str] = None


class GoodputMeasurementStatus(ApiModel):
    """Goodput and the timings it is computed from (seconds as decimal strings)."""

    result: Optional[str] = Field(None, description="Goodput ratio.")
    current_step: Optional[Int64] = None
    highest_step: Optional[Int64] = None
    interruption_count: Optional[Int32] = None
    last_checkpoint_step: Optional[Int64] = None
    log_interval: Optional[Int64] = None
    last_non_warmup_step: Optional[Int64] = None
    warmup_base_step: Optional[Int64] = None
    training_time_sec: Optional[str] = None
    lost_work_time_sec: Optional[str] = None
    reschedule_time_sec: Optional[str] = None
    resume_time_sec: Optional[str] = None
    checkpoint_save_time_sec: Optional[str] = None
    avg_step_time_sec: Optional[str] = None
    warmup_time_sec: Optional[str] = None
    non_warmup_time_sec: Optional[str] = None
    prior_warmup_time_sec: Optional[str] = None
    prior_non_warmup_time_sec: Optional[str] = None
    avg_tflops_per_gpu: Optional[str] = Field(None, alias="avgTFLOPSPerGPU")
    last_checkpoint_time: Optional[Time] = None
    start_time: Optional[Time] = None
    completion_time: Optional[Time] = None
    last_step_timestamp: Optional[Time] = None
    application_start_time: Optional[Time] = None
    application_stop_time: Optional[Time] = None
    pending_interruption: Optional[PendingInterruption] = None
    conditions: Optional[Conditions] = None


class BandwidthResult(ApiModel):
    """Bandwidth at one message size (GB/s as decimal strings)."""

    size_bytes: Int64
    alg_bw: str = Field(alias="algBW")
    bus_bw: str = Field(alias="busBW")
    samples: Int32


class BandwidthFailure(ApiModel):
    """Why a collective run cannot be trusted, whatever bandwidth it printed."""

    reason: Literal["CollectiveDataCorrupted", "CollectiveRunFailed", "CollectiveTableIncomplete"] = Field(
        description="CollectiveDataCorrupted: non-zero #wrong or out-of-bounds values; CollectiveRunFailed: a CUDA or NCCL "
        "failure line; CollectiveTableIncomplete: the result table never finished."
    )
    message: str = Field(max_length=1024, description="What the log showed.")


class BandwidthMeasurementStatus(ApiModel):
    """Bandwidth per message size, the NCCL networks seen, and why the run failed if it did."""

    results: Optional[list[BandwidthResult]] = None
    transport: Annotated[Optional[list[Annotated[str, Field(min_length=1, max_length=63)]]], Crd(list_type="set")] = Field(
        None, max_length=16, description="NCCL networks that carried the collective, e.g. IB, Socket, Libfabric (record only)."
    )
    failure: Optional[BandwidthFailure] = None
    start_time: Optional[Time] = None
    completion_time: Optional[Time] = None
    conditions: Optional[Conditions] = None


class GoodputMeasurement(ApiObject):
    """Goodput of a training Job, read from its log."""

    plural = "goodputmeasurements"
    printer_columns = (PrinterColumn(name="Result", type="string", json_path=".status.result", description="Goodput ratio"),)

    kind: Literal["GoodputMeasurement"]
    spec: GoodputMeasurementSpec
    status: Optional[GoodputMeasurementStatus] = None


class BandwidthMeasurement(ApiObject):
    """NCCL bandwidth of a Job, read from its launcher log."""

    plural = "bandwidthmeasurements"
    printer_columns = (PrinterColumn(name="Test", type="string", json_path=".spec.testType", description="NCCL test"),)

    kind: Literal["BandwidthMeasurement"]
    spec: BandwidthMeasurementSpec
    status: Optional[BandwidthMeasurementStatus] = None
