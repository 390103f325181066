"""From a source to an on-disk cache, and back out of it block by block: ingest (CSV,
Parquet, Arrow, in-memory data), the quantile and category sketches of pass 1, the
``BinMapper``, the build, the store (manifest, writer, reader, backends), prefetch and
the build's memory plan."""
