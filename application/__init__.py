"""Use cases: guarded tool invocation, the tool loop and the agent pipelines."""
