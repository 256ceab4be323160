"""Shared foundations every wing may use: items, hashing, registries, options, paths and small utilities."""
