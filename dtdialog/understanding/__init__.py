"""Reading the customer's message: DT-Q parts, queries, entities, tried actions, presuppositions, scope."""
