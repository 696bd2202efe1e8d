"""Every write to a store: traces and their versions, appends, deletions, reviews, the search
index."""
