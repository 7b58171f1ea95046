"""Shared building blocks of the ``nvcre.nvidia.com/v1alpha1`` API.

Holds the model base class (camelCase on the wire, snake_case in Python, unknown fields
rejected, no type coercion), object metadata, and the types several kinds embed: env vars,
node targets, gang scheduling, workload labels, conditions, failed nodes, references and
measurement configs.

Nothing here has a default other than ``None``: parsing never adds a field the input did not
have, so ``to_dict()`` gives back exactly the mapping that was parsed. Defaults are resolved by
the compiler (or, for the few documented CRD defaults, by the API server).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from .cel_rules import LABEL_KEY_RULES, QUEUE_LABEL_KEY_RULES, THRESHOLD_KEYS, THRESHOLD_KEYS_RULE, VALUE_FROM_FORBIDDEN
from .markers import Crd, Rule
from .patterns import (
    CONDITION_REASON,
    CONDITION_TYPE,
    DURATION,
    ENV_NAME,
    GO_DURATION,
    LABEL_VALUE,
    LABEL_VALUE_MAX,
    MAX_ENV,
    MAX_ENV_VALUE,
    MAX_FINALIZERS,
    MAX_LABELS,
    MAX_NAME,
    MAX_SHORT_STRING,
    MAX_THRESHOLD_EXPRESSION,
    QUANTITY,
    QUEUE_LABEL_KEY,
    QUEUE_NAME,
)


class ApiModel(BaseModel):
    """Base of every API type: wire names are camelCase aliases, unknown keys are errors."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
        strict=True,
        defer_build=True,
    )

    #: CEL rules on this type's object node (copied into the CRD, evaluated offline).
    crd_rules: ClassVar[tuple[Rule, ...]] = ()
    #: Other schema keywords for this type's object node (x-kubernetes-embedded-resource, ...).
    crd_extra: ClassVar[dict[str, Any]] = {}

    @classmethod
    def from_dict(cls, data: Any) -> "ApiModel":
        """Validate wire data: only camelCase keys are accepted (snake_case is an unknown field)."""
        return cls.model_validate(data, by_alias=True, by_name=False)

    def to_dict(self) -> dict[str, Any]:
        """The wire form: camelCase keys, only the fields that were set."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


# ---------------------------------------------------------------------------------------------
# Scalar aliases. Each carries its constraints so the CRD and pydantic agree.

Int32 = Annotated[int, Crd(format="int32")]
Int64 = Annotated[int, Crd(format="int64")]
Time = Annotated[str, Crd(format="date-time")]
#: A metav1.Duration field: any Go duration that is not negative (``1.5h``, ``90m``, ``250ms``).
Duration = Annotated[str, Field(min_length=1, max_length=32, pattern=GO_DURATION)]
#: A Certification option's duration, with NVCRE's stricter pattern (whole numbers; h, m, s, ms).
CertificationDuration = Annotated[str, Field(min_length=1, max_length=32, pattern=DURATION)]
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME)]
ShortString = Annotated[str, Field(max_length=MAX_SHORT_STRING)]
LabelValue = Annotated[str, Field(max_length=LABEL_VALUE_MAX, pattern=LABEL_VALUE)]
#: An integer or a quantity string such as "500Gi" (``x-kubernetes-int-or-string``).
Quantity = Union[int, Annotated[str, Field(max_length=32, pattern=QUANTITY)]]
FreeForm = Annotated[Any, Crd(preserve_unknown=True)]
FreeFormObject = Annotated[Any, Crd(preserve_unknown=True, object_type=True)]
Phase = Literal["Pending", "InProgress", "Succeeded", "Failed"]
#: NVCRE's three, the bandwidth run that cannot be trusted (corrupted, failed, unfinished table)
#: and the training run that diverged (a non-finite loss)
FailureReason = Literal[
    "HardwareFailureDetected",
    "ThresholdViolation",
    "WorkloadFailed",
    "CollectiveDataCorrupted",
    "CollectiveRunFailed",
    "CollectiveTableIncomplete",
    "TrainingLossNotFinite",
]
StringMap = dict[str, str]


# ---------------------------------------------------------------------------------------------
# Metadata.


class OwnerReference(ApiModel):
    """A reference to the object that owns this one."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: Optional[bool] = None
    block_owner_deletion: Optional[bool] = None


class ObjectMeta(ApiModel):
    """Standard object metadata. Server-written fields pass through unchanged."""

    name: Optional[str] = None
    generate_name: Optional[str] = None
    namespace: Optional[str] = None
    labels: Optional[StringMap] = None
    annotations: Optional[StringMap] = None
    uid: Optional[str] = None
    resource_version: Optional[str] = None
    generation: Optional[int] = None
    creation_timestamp: Optional[str] = None
    deletion_timestamp: Optional[str] = None
    deletion_grace_period_seconds: Optional[int] = None
    finalizers: Optional[list[str]] = None
    owner_references: Optional[list[OwnerReference]] = None
    managed_fields: Optional[list[dict[str, Any]]] = None
    self_link: Optional[str] = None


class TemplateMeta(ApiModel):
    """Object metadata of a template: its labels and annotations are copied onto every object
    made from it. A name, generateName, namespace and finalizers are accepted, as in any object
    metadata, and ignored: the controller names, places and finalizes the objects it makes."""

    name: Optional[str] = Field(None, max_length=MAX_NAME)
    generate_name: Optional[str] = Field(None, max_length=MAX_NAME)
    namespace: Optional[str] = Field(None, max_length=MAX_SHORT_STRING)
    labels: Optional[StringMap] = None
    annotations: Optional[StringMap] = None
    finalizers: Optional[list[Annotated[str, Field(max_length=MAX_NAME)]]] = Field(None, max_length=MAX_FINALIZERS)


# ---------------------------------------------------------------------------------------------
# Workload settings shared by Certification, WorkloadRun, Workflow and Job.


class EnvVar(ApiModel):
    """An environment variable for the workload, always given by value."""

    crd_rules = (VALUE_FROM_FORBIDDEN,)

    name: str = Field(min_length=1, max_length=MAX_NAME, pattern=ENV_NAME, description="Variable name (a C identifier).")
    value: Optional[str] = Field(None, max_length=MAX_ENV_VALUE, description="Variable value.")
    value_from: Optional[FreeFormObject] = Field(
        None, description="Not supported. Present in the schema only so that it is rejected with a clear message."
    )

    @field_validator("value_from")
    @classmethod
    def _reject_value_from(cls, value: Any) -> Any:
        # A null is dropped by the API server like any absent optional field, so it is accepted.
        if value is None:
            return value
        raise PydanticCustomError("value_from_forbidden", VALUE_FROM_FORBIDDEN.message)


EnvList = Annotated[list[EnvVar], Crd(list_type="map", list_map_keys=("name",)), Field(max_length=MAX_ENV)]


class LocalObjectReference(ApiModel):
    """A reference to an object in the same namespace, by name."""

    name: Name


class GangSchedulerSpec(ApiModel):
    """Opts every workload pod into a gang-aware scheduler and labels the workload with its queue."""

    scheduler_name: Name = Field(description="Scheduler that places the pods, for example kai-scheduler.")
    queue: Optional[str] = Field(
        None, max_length=63, pattern=QUEUE_NAME, description="Queue name; the compiler defaults it to default-queue."
    )
    queue_label_key: Annotated[Optional[str], Crd(rules=QUEUE_LABEL_KEY_RULES)] = Field(
        None,
        max_length=317,
        pattern=QUEUE_LABEL_KEY,
        description="Label key the queue is written under; the compiler defaults it to kai.scheduler/queue.",
    )


class WorkloadMetadata(ApiModel):
    """Metadata for the submitted workload object (the TrainJob). These are not pod labels."""

    labels: Annotated[Optional[dict[str, LabelValue]], Crd(rules=LABEL_KEY_RULES)] = Field(
        None, max_length=MAX_LABELS, description="Labels for the workload object, at most 32."
    )


class TaintSelector(ApiModel):
    """A taint a target node must carry; matching tolerations are added to the workload pods."""

    key: str = Field(min_length=1, max_length=317)
    value: Optional[str] = Field(None, max_length=MAX_SHORT_STRING, description="Empty matches any value.")
    effect: Optional[Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"]] = Field(None, description="Empty matches any effect.")


#: ``Gt``/``Lt`` compare the node label as an integer, so they take one value that is an integer.
#: Spelled for the API server's cost estimate: the requirement sits in lists it cannot bound (a
#: Workflow's ``overrides``), and the same check with ``in [...]`` and ``[0-9]`` is estimated 22%
#: over the per-rule budget, so the CRD would be refused. CEL's regular expressions are RE2,
#: where ``\d`` is the ASCII digits only.
INTEGER_COMPARISON = Rule(
    rule="(self.operator != 'Gt' && self.operator != 'Lt') || (has(self.values) && size(self.values) == 1 && self.values[0].matches('^-?\\\\d+$'))",
    message="operators Gt and Lt take exactly one value, an integer",
    field_path=".values",
)


class NodeSelectorRequirement(ApiModel):
    """A node label requirement; Gt and Lt compare the label as a 64-bit integer."""

    crd_rules = (INTEGER_COMPARISON,)

    key: str = Field(min_length=1, max_length=317)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: Optional[list[ShortString]] = None


class TargetSpec(ApiModel):
    """Which nodes to use. All filters are combined with AND; an empty target means every node."""

    node_selector: Optional[StringMap] = None
    match_expressions: Optional[list[NodeSelectorRequirement]] = None
    node_names: Optional[list[str]] = None
    taint_selectors: Optional[list[TaintSelector]] = Field(
        None, description="Taints a node must carry (all of them); node.kubernetes.io/unschedulable opts cordoned nodes in."
    )


#: Metric name to a CEL expression over a double ``value``, for example ``value >= 900``.
Thresholds = Annotated[
    dict[str, Annotated[str, Field(min_length=1, max_length=MAX_THRESHOLD_EXPRESSION)]],
    Crd(rules=(THRESHOLD_KEYS_RULE,)),
    Field(max_length=len(THRESHOLD_KEYS)),
]


class GoodputMeasurementConfig(ApiModel):
    """Asks for goodput to be measured from the workload's training log."""

    log_profile_ref: Name = Field(description="Name of the LogProfile that parses the log.")
    sample_interval: Optional[Duration] = Field(None, description="How often the log is read; 60s when unset.")


class BandwidthMeasurementConfig(GoodputMeasurementConfig):
    """Asks for NCCL bus bandwidth to be measured from the launcher log."""

    test_type: Optional[ShortString] = Field(None, description="NCCL test name, for example all_reduce.")


# ---------------------------------------------------------------------------------------------
# Status building blocks.


class Condition(ApiModel):
    """One observation of the object's state (the metav1.Condition shape)."""

    type: str = Field(max_length=316, pattern=CONDITION_TYPE)
    status: Literal["True", "False", "Unknown"]
    observed_generation: Optional[Int64] = Field(None, ge=0)
    last_transition_time: Time
    reason: str = Field(min_length=1, max_length=1024, pattern=CONDITION_REASON)
    message: str = Field(max_length=32768)


Conditions = Annotated[list[Condition], Crd(list_type="map", list_map_keys=("type",))]


class FailedNode(ApiModel):
    """A node blamed for a failure, with the reason and the detector's message."""

    name: Name
    reason: FailureReason
    message: Optional[str] = Field(None, max_length=32768)


FailedNodeList = Annotated[list[FailedNode], Crd(list_type="map", list_map_keys=("name", "reason"))]
NodeNameSet = Annotated[list[str], Crd(list_type="set")]


class TypedLocalObjectReference(ApiModel):
    """A reference to an object of a given kind in the same namespace."""

    api_group: Optional[str] = None
    kind: Name
    name: Name


class WorkflowReference(ApiModel):
    """A reference to a Workflow."""

    name: Name
    namespace: Optional[str] = None


class WorkloadReference(ApiModel):
    """A reference to an object of any kind; the namespace defaults to the referrer's."""

    api_version: Name
    kind: Name
    name: Name
    namespace: Optional[str] = None


# ---------------------------------------------------------------------------------------------
# Top-level objects.


class PrinterColumn(BaseModel):
    """An ``additionalPrinterColumns`` entry (``kubectl get`` output)."""

    model_config = ConfigDict(frozen=True)

    name: str
    type: Literal["string", "integer", "number", "boolean", "date"]
    json_path: str
    description: Optional[str] = None

    def as_schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.description:
            out["description"] = self.description
        return out


PHASE_COLUMN = PrinterColumn(name="Phase", type="string", json_path=".status.phase", description="Pending, InProgress, Succeeded or Failed")


class ApiObject(ApiModel):
    """A top-level object of the API. Subclasses name their kind and CRD facts as class attributes."""

    #: Lower-case plural resource name (also the CRD file name stem).
    plural: ClassVar[str]
    namespaced: ClassVar[bool] = True
    #: Printer columns before the Age column every kind gets.
    printer_columns: ClassVar[tuple[PrinterColumn, ...]] = ()

    api_version: Literal["nvcre.nvidia.com/v1alpha1"]
    kind: str
    metadata: ObjectMeta

    @classmethod
    def kind_name(cls) -> str:
        return str(cls.model_fields["kind"].annotation.__args__[0])  # type: ignore[union-attr]

    @classmethod
    def has_status(cls) -> bool:
        return "status" in cls.model_fields
