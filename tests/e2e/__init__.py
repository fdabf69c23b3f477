"""End-to-end tests of the compatlab binary.

A package, so that its conftest does not shadow probe/tests/conftest.py when both run together.
"""
