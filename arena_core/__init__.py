"""Pure logic of the open model arena: registry, vote log, ratings, leaderboards."""
