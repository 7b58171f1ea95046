"""Regular expressions and limits shared by the API models, written once so the CRD and the
models cannot drift apart.

Patterns use the RE2 subset (no look-around, no back-references) so that the API server (Go
RE2), pydantic (Rust regex) and the offline validator (RE2) read them the same way.
"""

from __future__ import annotations

# A DNS-1123 label: lower-case alphanumerics and '-', starting and ending alphanumeric.
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

# A Kubernetes label key: optional DNS-subdomain prefix and '/', then a name of 1-63 characters.
# The prefix length (at most 253) is checked by a separate rule, see cel_rules. Dots are written
# as [.] rather than an escape so the pattern can sit inside a CEL string literal unchanged.
LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?$"
)
# A label value: empty, or 1-63 characters starting and ending alphanumeric.
LABEL_VALUE = r"^$|^[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?$"
LABEL_VALUE_MAX = 63

# Gang-scheduler queue name and the label key the queue is written under.
QUEUE_NAME = r"^$|^[a-zA-Z0-9]([a-zA-Z0-9._-]*[a-zA-Z0-9])?$"
QUEUE_LABEL_KEY = r"^$|" + LABEL_KEY

# An extended resource name with a mandatory domain prefix (rdma/ib, nvidia.com/mlnxnics).
NIC_RESOURCE_NAME = (
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/"
    r"[a-zA-Z0-9]([-A-Za-z0-9_.]{0,61}[a-zA-Z0-9])?$"
)

# Environment variable names: C identifiers, because values travel as `mpirun -x NAME=VALUE`.
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"

# The duration pattern NVCRE puts on a Certification's timeoutPerJob and measurementTimeout:
# whole numbers with h, m, s or ms (1h, 90m, 1h30m, 500ms).
DURATION = r"^([0-9]+(h|m|s|ms))+$"
# Any Go duration that is not negative, as a metav1.Duration field takes it (1.5h, 1h30m,
# 250ms, 1500us, 0): decimal numbers with h, m, s, ms, us (or µs) or ns, or a bare 0.
GO_DURATION = r"^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$"

# Sizes.
STORAGE_SIZE = r"^([0-9]+(\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei)?$"
MAX_BYTES = r"^[0-9]+(K|M|G|T)?$"

# A Kubernetes resource quantity written as a string (the integer form needs no pattern).
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

# Characters allowed in a source repository URL; the scheme is checked by a CEL rule.
SOURCE_REPO_CHARS = r"^[A-Za-z0-9._~:/@%+-]+$"

# host[:port] of a DCGM host engine: a DNS name or IPv4 address, optional port.
# The port, when given, is 1-65535 without leading zeros.
DCGM_HOST = (
    r"^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?"
    r"(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$"
)

# metav1.Condition fields.
CONDITION_TYPE = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"

# RFC 3339 timestamps, the wire form of metav1.Time (checked for `format: date-time`).
DATE_TIME = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$"

# Caps from the product: at most 32 env entries and 32 workload labels, 1-64 categories.
MAX_ENV = 32
MAX_LABELS = 32
MIN_CATEGORIES = 1
MAX_CATEGORIES = 64

# Bounds that keep CEL cost estimates small; generous for real input.
MAX_NAME = 253
MAX_IMAGE = 512
MAX_ENV_VALUE = 4096
MAX_SOURCE_REPO = 2048
MAX_PULL_SECRETS = 32
MAX_FINALIZERS = 32
MAX_SHORT_STRING = 63
MAX_THRESHOLD_EXPRESSION = 1024
