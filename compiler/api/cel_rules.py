"""The CEL validation rules the API uses in more than one place, with their messages.

Each rule is a ``Rule`` (see markers) that the CRD generator copies verbatim into
``x-kubernetes-validations`` and the offline validator evaluates with cel-python, so the
text here is exactly what the API server runs. Rules that belong to one model only are
declared next to that model.

Only CEL that both the API server and cel-python understand is used: ``has``, ``size``,
``all``/``exists``/``exists_one``/``filter``, ``in``, ``matches``, ``startsWith``,
``contains``, and from the Kubernetes quantity library ``quantity``, ``isQuantity`` and
``compareTo``, which cel_eval supplies to cel-python.
"""

from __future__ import annotations

from ..vocabulary import GROUP, RESERVED_PREFIX
from .markers import Rule
from .patterns import LABEL_KEY, MAX_ENV, MAX_LABELS

__all__ = [
    "THRESHOLD_KEYS",
    "VALUE_FROM_FORBIDDEN",
    "VALUE_FROM_MESSAGE",
    "MODEL_DECIDED_RULES",
    "LABEL_KEY_RULES",
    "QUEUE_LABEL_KEY_RULES",
    "NIC_RESOURCE_NAME_RULES",
    "SOURCE_REPO_SCHEME",
    "SOURCE_REPO_HOST",
    "THRESHOLD_KEYS_RULE",
    "NON_NEGATIVE_QUANTITY",
    "SPEC_IMMUTABLE",
    "immutable",
    "presence_fixed",
    "requests_within_limits",
    "MERGED_ENV_CAP",
    "MERGED_LABEL_CAP",
    "UNIQUE_CATEGORIES",
]

#: Metric names a threshold may name; the value is a CEL expression over a double ``value``.
THRESHOLD_KEYS = ("busBandwidthGBps", "algBandwidthGBps", "goodputRatio", "avgTFLOPsPerGPU", "avgStepTimeSec")

VALUE_FROM_MESSAGE = "valueFrom is not supported: set value instead, because variables reach MPI ranks by value on the command line"
VALUE_FROM_FORBIDDEN = Rule(
    rule="!has(self.valueFrom)",
    message=VALUE_FROM_MESSAGE,
    field_path=".valueFrom",
    reason="FieldValueForbidden",
)

#: Rule texts whose outcome the pydantic models decide with the same code, path and message;
#: the offline validator does not evaluate them (the API server, which has no models, does).
MODEL_DECIDED_RULES = frozenset({VALUE_FROM_FORBIDDEN.rule})

_RESERVED_KEY = "app.kubernetes.io/managed-by"
#: Any subdomain of the reserved prefix (``team.nvcre.nvidia.com/x``) is reserved too.
_RESERVED_SUBDOMAIN = "^[^/]*[.]" + GROUP.replace(".", "[.]") + "/"

#: Rules on a ``labels`` map of workloadMetadata (map keys cannot carry an OpenAPI pattern).
LABEL_KEY_RULES = (
    Rule(
        rule=(f"self.all(k, k != '{_RESERVED_KEY}' && !k.startsWith('{RESERVED_PREFIX}') && !k.matches('{_RESERVED_SUBDOMAIN}'))"),
        message=(f"label keys must not be {_RESERVED_KEY} or use the reserved prefix {RESERVED_PREFIX} or a subdomain of it"),
    ),
    Rule(
        rule=f"self.all(k, k.matches('{LABEL_KEY}'))",
        message="label keys must be valid Kubernetes label keys: an optional DNS prefix and '/', then a name of 1-63 alphanumerics, '-', '_' or '.'",
    ),
    Rule(
        rule="self.all(k, !k.contains('/') || k.matches('^[^/]{1,253}/'))",
        message="a label key prefix (before '/') must be at most 253 characters",
    ),
)

#: Rules on gangScheduler.queueLabelKey.
QUEUE_LABEL_KEY_RULES = (
    Rule(
        rule="!self.contains('/') || self.matches('^[^/]{1,253}/')",
        message="queueLabelKey prefix (before '/') must be at most 253 characters",
    ),
    Rule(
        rule=(f"self != '{_RESERVED_KEY}' && !self.startsWith('{RESERVED_PREFIX}') && !self.matches('{_RESERVED_SUBDOMAIN}')"),
        message=(f"queueLabelKey must not be {_RESERVED_KEY} or use the reserved prefix {RESERVED_PREFIX} or a subdomain of it"),
    ),
)

#: Rules on nicResourceName: no Kubernetes-owned resource domains.
NIC_RESOURCE_NAME_RULES = (
    Rule(
        rule="!self.contains('kubernetes.io/') && !self.startsWith('k8s.io/') && !self.contains('.k8s.io/')",
        message="nicResourceName must not use a kubernetes.io or k8s.io resource domain",
    ),
)

SOURCE_REPO_SCHEME = Rule(
    rule="self.startsWith('https://') || self.startsWith('ssh://')",
    message="sourceRepo must be an https:// or ssh:// URL",
)

#: After the scheme: an optional user (``git@``) and a host, each starting with a letter or a
#: digit. An empty host is no URL, and a leading '-' would reach ssh as an option
#: (``ssh://-oProxyCommand=...``).
SOURCE_REPO_HOST = Rule(
    rule=(
        "!(self.startsWith('https://') || self.startsWith('ssh://'))"
        " || self.matches('^[a-z]+://([A-Za-z0-9][A-Za-z0-9._~%+:-]*@)?[A-Za-z0-9][A-Za-z0-9._~%+:-]*(/.*)?$')"
    ),
    message="sourceRepo must name a host after the scheme, and the host and any user@ part must start with a letter or digit",
)

THRESHOLD_KEYS_RULE = Rule(
    rule="self.all(k, k in [" + ", ".join(f"'{k}'" for k in THRESHOLD_KEYS) + "])",
    message="unknown threshold metric; supported metrics: " + ", ".join(THRESHOLD_KEYS),
)

NON_NEGATIVE_QUANTITY = Rule(
    rule="!isQuantity(string(self)) || quantity(string(self)).compareTo(quantity('0')) >= 0",
    message="must be a non-negative quantity",
)

SPEC_IMMUTABLE = Rule(rule="self == oldSelf", message="spec is immutable after creation")


def immutable(field: str) -> Rule:
    """Field-level rule: once set, the value may not change."""
    return Rule(rule="self == oldSelf", message=f"{field} is immutable")


def presence_fixed(field: str) -> Rule:
    """Parent-level rule: an optional immutable field may not be added or removed on update."""
    return Rule(
        rule=f"has(self.{field}) == has(oldSelf.{field})",
        message=f"{field} cannot be added or removed after creation",
    )


def requests_within_limits(resource: str) -> Rule:
    """Struct-level rule on {limits, requests}: a request may not exceed its limit."""
    req, lim = f"self.requests.{resource}", f"self.limits.{resource}"
    return Rule(
        rule=(
            f"!has(self.requests) || !has(self.limits) || !has({req}) || !has({lim})"
            f" || !isQuantity(string({req})) || !isQuantity(string({lim}))"
            f" || quantity(string({req})).compareTo(quantity(string({lim}))) <= 0"
        ),
        message=f"requests.{resource} must not exceed limits.{resource}",
    )


# The two merged caps below first try the cheap bound (the plain sum of both sizes) and only
# count distinct names or keys when that bound is exceeded; the conditional operator is the
# one CEL construct that skips its untaken branch in every evaluator.

#: Spec-level rule on a Certification: global env plus one category's env, merged by name.
MERGED_ENV_CAP = Rule(
    rule=(
        "!has(self.categories) || self.categories.all(c, (!has(c.options) || !has(c.options.env)) ? true : "
        f"!has(self.env) ? size(c.options.env) <= {MAX_ENV} : "
        f"size(self.env) + size(c.options.env) <= {MAX_ENV} ? true : "
        "size(self.env) + size(c.options.env.filter(e, !self.env.exists(g, g.name == e.name)))"
        f" <= {MAX_ENV})"
    ),
    message=f"spec.env and a category's options.env together name more than {MAX_ENV} variables",
    field_path=".categories",
)

#: Spec-level rule on a Certification: global workload labels plus one category's, merged by key.
MERGED_LABEL_CAP = Rule(
    rule=(
        "!has(self.categories) || self.categories.all(c, "
        "(!has(c.options) || !has(c.options.workloadMetadata) || !has(c.options.workloadMetadata.labels)) ? true : "
        "(!has(self.workloadMetadata) || !has(self.workloadMetadata.labels)) ? "
        f"size(c.options.workloadMetadata.labels) <= {MAX_LABELS} : "
        f"size(self.workloadMetadata.labels) + size(c.options.workloadMetadata.labels) <= {MAX_LABELS} ? true : "
        "size(self.workloadMetadata.labels)"
        " + size(c.options.workloadMetadata.labels.filter(k, !(k in self.workloadMetadata.labels)))"
        f" <= {MAX_LABELS})"
    ),
    message=(f"spec.workloadMetadata.labels and a category's options.workloadMetadata.labels together hold more than {MAX_LABELS} labels"),
    field_path=".categories",
)

#: Rule on the categories list: an identical entry twice would run the same Workflow twice.
#: The same domain/variant with different options is allowed (for example MNNVL on and off).
UNIQUE_CATEGORIES = Rule(
    rule="self.all(c, self.exists_one(d, d.variant == c.variant ? d == c : false))",
    message="categories must not repeat an identical entry (same domain, variant and options)",
    reason="FieldValueDuplicate",
)
