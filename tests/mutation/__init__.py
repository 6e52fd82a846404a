"""``make mutate``'s report: the mutation score of each guarding module and its survivors."""
