"""Custom Great Expectations expectations used in ppdp's suites.

This module is imported before any suite is loaded (see :func:`expectations.validate_frame`): GX silently
drops an expectation whose class is not registered.
"""
