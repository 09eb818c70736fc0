"""Building an engine: the spec, its config and resolution, index location, prebuilt bundles, profiles, projects."""
