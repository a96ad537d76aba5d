"""The guard's room: start a command, stream and save its output, watch its clocks, diagnose and end its tree.

``guard.supervise`` is the one entry point and the lifecycle; the other modules are its parts:
containment (a cgroup of the run's own, or the process scan), spawn (start, subreaper, reaper), pump,
tree, deadline, escalate, snapshot (py-spy, nvidia-smi), diagnosis (pure: evidence in, findings
out) and workflow. Nothing here knows about rules, scanning or rendering.
"""
