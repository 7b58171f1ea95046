"""The exception the control-plane harness raises for anything it cannot do."""


class ControlPlaneError(RuntimeError):
    """The control plane could not be started or used; the message says why."""
