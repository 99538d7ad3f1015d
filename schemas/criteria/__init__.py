"""Privacy criteria: one class per criterion (:mod:`ppdp.schemas.criteria.base`), one module per criterion or family,
one registry (:data:`ppdp.schemas.criteria.registry.CRITERIA`) that the policy model, the ``ppdp validate`` options,
the gates and the report's wording read."""
