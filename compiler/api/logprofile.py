"""LogProfile: how to read a workload's log (cluster-scoped, no status).

A profile names regular expressions (Go RE2 syntax with ``(?P<name>...)`` captures) for the
events the goodput and bandwidth measurements look for, the timestamp layout, and which pod
and container to read.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field

from .common import ApiModel, ApiObject, Int32
from .markers import Crd

PodChoice = Annotated[Optional[Literal["first", "last"]], Crd(default="first")]


class TimestampSpec(ApiModel):
    """How log timestamps are written."""

    layout: str = Field(min_length=1, max_length=256, description="Go time layout, for example 2006-01-02T15:04:05Z07:00.")


class EventPattern(ApiModel):
    """A regular expression for one kind of log line."""

    regex: str = Field(min_length=1, max_length=4096, description="RE2 expression with named captures.")
    example: Optional[str] = Field(None, max_length=4096, description="A line the expression matches.")
    units: Optional[dict[str, Literal["s", "ms", "us"]]] = Field(None, description="Time unit of a capture; seconds when unset.")


class LogPatternSet(ApiModel):
    """The log events a profile recognises; every one is optional."""

    training_step: Optional[EventPattern] = None
    checkpoint_save: Optional[EventPattern] = None
    checkpoint_done: Optional[EventPattern] = None
    checkpoint_restore: Optional[EventPattern] = None
    checkpoint_loaded: Optional[EventPattern] = None
    application_start: Optional[EventPattern] = None
    warmup_step: Optional[EventPattern] = None
    bandwidth_result: Optional[EventPattern] = None
    network_transport: Optional[EventPattern] = None


class WorkerStrategy(ApiModel):
    """Which pods' logs are read."""

    type: Literal["Single", "Multi"]
    lifecycle_pod: PodChoice = None
    training_step_pod: PodChoice = None
    replicated_job_name: Annotated[Optional[str], Crd(default="trainer")] = Field(None, max_length=63)


class LogProfileSpec(ApiModel):
    """Patterns and reading instructions."""

    timestamp: TimestampSpec
    patterns: LogPatternSet
    worker_strategy: Optional[WorkerStrategy] = None
    container_name: Optional[str] = Field(None, max_length=63, description="Detected when unset.")
    warmup_steps: Optional[Int32] = Field(None, ge=0)
    log_interval: Optional[Int32] = Field(None, ge=0)


class LogProfile(ApiObject):
    """Regular expressions that turn a workload log into goodput and bandwidth measurements."""

    plural = "logprofiles"
    namespaced = False

    kind: Literal["LogProfile"]
    spec: LogProfileSpec
