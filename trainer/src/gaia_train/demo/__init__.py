"""The CPU demo: a demo snapshot, a tiny model built on the spot, a warm start from scripted episodes.

Not needed on GPU nodes: its libraries come with the `demo` extra, and no other room imports it.
"""
