"""Capacity planning and gateway sizing (``xcbench plan``); the model is described in model docs
of xcbench.plan.storage and xcbench.plan.gateway."""
