"""Getting a run out of the app: Perfetto / Chrome-trace JSON, tables as CSV, original sources, chart PNGs.

`perfetto` and `tables` are pure (polars in, bytes out); `routes` serves them over HTTP.
"""
