"""The guard's room: start a command, stream and save its output, watch its clocks, diagnose and end its tree.

``guard.supervise`` is the one entry point; the other modules are its parts (spawn, pump, tree,
escalate, snapshot, workflow). Nothing here knows about rules, scanning or rendering.
"""
