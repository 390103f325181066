"""The manifest's per-feature summary and label statistics of a build (``oocboost info``
prints them)."""


def feature_summary(mapper, pass1):
    """One dict per feature: name, type, value bins, missing count, and for categorical
    features the categories kept and seen, for numeric ones the sketch's figures."""
    out = []
    for f, name in enumerate(mapper.feature_names):
        entry = {"name": name, "type": mapper.feature_types[f],
                 "n_bins": int(mapper.n_value_bins[f]),
                 "n_missing": int(pass1.n_missing.get(name, 0)) if pass1 else None}
        encoder = mapper.encoders[f]
        if mapper.feature_types[f] == "categorical" or encoder is not None:
            entry["n_categories"] = (len(mapper.categories[f]) if encoder is None
                                     else len(encoder["categories"]))
            seen = getattr(pass1, "distinct_seen", {}).get(name) if pass1 else None
            entry["has_other"] = (bool(mapper.has_other[f]) if encoder is None
                                  else seen is not None and seen > entry["n_categories"])
            if seen is not None:
                entry["n_distinct_seen"] = seen
        else:
            entry["n_inf"] = int(pass1.n_inf.get(name, 0)) if pass1 else None
            if pass1 and name in getattr(pass1, "n_out_of_range", {}):
                entry["n_out_of_range"] = int(pass1.n_out_of_range[name])
            summary = getattr(pass1, "summaries", {}).get(name) if pass1 else None
            if summary is not None:
                entry.update(summary)
        out.append(entry)
    return out


def label_stats_dict(label_stats):
    """The label statistics as JSON: one dict, or a list of one per label column."""
    if isinstance(label_stats, list):
        return [s.to_dict() for s in label_stats]
    return label_stats.to_dict()


def warn_folded(mapper, pass1, max_categories, source_name):
    """Warn, naming the columns, when a categorical column had more categories than
    the 65,535 a feature keeps and the user set no ``max_categories`` (then the rarest
    were folded into "other" without having been asked for)."""
    import warnings

    from ..common import MAX_CATEGORIES

    if max_categories is not None:
        return
    seen = getattr(pass1, "distinct_seen", {})
    for f, name in enumerate(mapper.feature_names):
        n_seen = seen.get(name, 0)
        if n_seen > MAX_CATEGORIES:
            n_kept = (len(mapper.categories[f]) if mapper.encoders[f] is None
                      else len(mapper.encoders[f]["categories"]))
            warnings.warn(f"{source_name}: column {name!r} has at least {n_seen:,} "
                          f"categories; a feature keeps at most {MAX_CATEGORIES:,}: the "
                          f"{n_kept:,} most frequent keep their own code and the rest are "
                          f"folded into 'other' (set max_categories to choose fewer)",
                          stacklevel=4)
