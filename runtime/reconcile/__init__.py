"""The tiers, each sequencing compile -> apply -> observe -> judge -> report: the Workflow and Job
tiers are packages of parts under a short coordinator (``workflow/``, ``job/``), the rest one module each."""
