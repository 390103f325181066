import sys

from bench.run import main

if __name__ == "__main__":
    if sys.argv[1:2] == ["streaming"]:
        from bench.streaming import main as streaming

        sys.exit(streaming(sys.argv[2:]))
    if sys.argv[1:2] == ["classic"]:
        from bench.classic import main as classic

        sys.exit(classic(sys.argv[2:]))
    if sys.argv[1:2] == ["coldstart"]:
        from bench.coldstart import main as coldstart

        sys.exit(coldstart(sys.argv[2:]))
    if sys.argv[1:2] == ["limits"]:
        from bench.limits import main as limits

        sys.exit(limits(sys.argv[2:]))
    if sys.argv[1:2] == ["ingest"]:
        from bench.ingest import main as ingest

        sys.exit(ingest(sys.argv[2:]))
    if sys.argv[1:2] == ["wide"]:
        from bench.wide import main as wide

        sys.exit(wide(sys.argv[2:]))
    if sys.argv[1:2] == ["serving"]:
        from bench.serving import main as serving

        sys.exit(serving(sys.argv[2:]))
    if sys.argv[1:2] == ["inspection"]:
        from bench.inspection import main as inspection

        sys.exit(inspection(sys.argv[2:]))
    if sys.argv[1:2] == ["fixedcosts"]:
        from bench.fixed_costs import main as fixed_costs

        sys.exit(fixed_costs(sys.argv[2:]))
    if sys.argv[1:2] == ["scale-stream"]:
        from bench.scale_stream import main as scale_stream

        sys.exit(scale_stream(sys.argv[2:]))
    if sys.argv[1:2] == ["dask"]:
        from bench.distributed_suite import main as dask_suite

        sys.exit(dask_suite(sys.argv[2:]))
    sys.exit(main())
