"""The environment: what a controller sees (visible state), what its actions reveal (simulation
over recorded traces), what they cost, the hindsight oracle, and the fixed policies."""
