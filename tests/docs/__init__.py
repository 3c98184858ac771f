"""The guide stays true: the README's and ``docs/``'s examples, links, shown output, field reference, runbooks."""
