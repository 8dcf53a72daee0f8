"""Paths and URLs, atomic writes, output-directory locks, Beam filesystems."""
