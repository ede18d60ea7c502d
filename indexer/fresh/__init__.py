"""Staying fresh: git hooks, background updates, publish and pull on git refs."""
