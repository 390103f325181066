"""Folders and object storage as one input (``cache/ingest/locations.py``): a hive-
partitioned Parquet folder, a folder of CSV files, and the same data on an S3 server
(moto's standalone server, started here: a real S3 API over HTTP, not a mock of ours),
read exactly as the local files are."""
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import oocboost
from oocboost.cache.ingest.dispatch import open_source
from oocboost.errors import InputError


def _parts(seed=0):
    """Four hive partitions (year, month) of 400 rows each, and the frame they make."""
    rng = np.random.default_rng(seed)
    parts, frames = {}, []
    for year in (2023, 2024):
        for month in (1, 11):
            x = np.round(rng.normal(size=400), 5)
            y = ((x + (year - 2023)) > 0.5).astype(float)
            parts[f"year={year}/month={month}/part-0.parquet"] = pa.table({"x": x, "y": y})
            frames.append(pd.DataFrame({"x": x, "y": y, "year": year, "month": month}))
    return parts, pd.concat(frames, ignore_index=True)


def _write_local(root, parts):
    for rel, table in parts.items():
        os.makedirs(os.path.dirname(root / rel), exist_ok=True)
        pq.write_table(table, root / rel)
    (root / "_SUCCESS").write_text("")


def _rows(source, names):
    batches = list(source.batches())
    return {n: np.concatenate([b.numeric[n] for b in batches]) for n in names}, \
        np.concatenate([b.label for b in batches])


@pytest.mark.parametrize("batch_rows", [150, 65536])
def test_hive_parquet_folder_reads_partition_keys_as_columns(tmp_path, batch_rows):
    parts, frame = _parts()
    _write_local(tmp_path / "data", parts)
    source = open_source(tmp_path / "data", label="y", batch_rows=batch_rows)
    assert source.feature_names == ["x", "year", "month"]
    assert source.feature_kinds == ["numeric"] * 3
    # path order: month=1 before month=11, 2023 before 2024
    values, labels = _rows(source, ["x", "year", "month"])
    for name in ("x", "year", "month"):
        np.testing.assert_array_equal(values[name], frame[name].to_numpy(float))
    np.testing.assert_array_equal(labels, frame["y"].to_numpy())


def test_folder_of_csv_files_and_refusals(tmp_path):
    _, frame = _parts()
    (tmp_path / "csv").mkdir()
    for k in range(4):
        frame.iloc[k * 400:(k + 1) * 400].to_csv(tmp_path / "csv" / f"p{k}.csv",
                                                  index=False)
    cache = oocboost.build_cache(tmp_path / "csv", tmp_path / "c.oocb", label="y",
                                 block_rows=300, quiet=True)
    assert cache.n_rows == 1600 and cache.feature_names == ["x", "year", "month"]
    labels, _ = cache.read_labels()
    np.testing.assert_array_equal(labels, frame["y"].to_numpy())
    # an error names the file and its line
    (tmp_path / "csv" / "p2.csv").write_text("x,y,year,month\n1,0,2023,1\noops,1,2023,1\n")
    with pytest.raises(InputError, match=r"p2.csv: line 3, column 'x': got 'oops'; "
                                         r"expected numbers"):
        list(open_source(tmp_path / "csv", label="y").batches())
    (tmp_path / "csv" / "p2.csv").write_text("x,y,year,month\n1,0,2023,1\n")
    (tmp_path / "csv" / "p3.csv").write_text("x,y\n1,0\n")
    with pytest.raises(InputError, match=r"p3.csv has other columns"):
        open_source(tmp_path / "csv", label="y")
    pq.write_table(pa.table({"x": [1.0]}), tmp_path / "csv" / "p4.parquet")
    with pytest.raises(InputError, match="the folder mixes formats"):
        open_source(tmp_path / "csv", label="y")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="holds no data files"):
        open_source(tmp_path / "empty")


@pytest.fixture(scope="module")
def s3_server():
    """moto's S3 server on a free port of this machine, its endpoint in the standard
    AWS environment variables that pyarrow reads."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("moto's S3 server did not start")
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    import boto3  # moto's own dependency: uploads with S3's plain PUT

    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"],
                          aws_access_key_id="testing", aws_secret_access_key="testing",
                          region_name="us-east-1")
    client.create_bucket(Bucket="data")

    def put(key, body):
        client.put_object(Bucket="data", Key=key, Body=body)

    try:
        yield put, env
    finally:
        proc.kill()
        proc.wait()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_s3_dataset_and_file_equal_the_local_ones(tmp_path, s3_server):
    put, env = s3_server
    parts, frame = _parts(seed=1)
    _write_local(tmp_path / "data", parts)
    for rel in parts:
        put(f"tbl/{rel}", (tmp_path / "data" / rel).read_bytes())
    put("tbl/_SUCCESS", b"")
    frame.to_csv(tmp_path / "d.csv", index=False)
    put("d.csv", (tmp_path / "d.csv").read_bytes())

    local = oocboost.build_cache(tmp_path / "data", tmp_path / "local.oocb", label="y",
                                 block_rows=500, quiet=True)
    remote = oocboost.build_cache("s3://data/tbl", tmp_path / "remote.oocb", label="y",
                                  block_rows=500, quiet=True)
    assert remote.feature_names == local.feature_names == ["x", "year", "month"]
    for i in range(local.n_blocks):
        np.testing.assert_array_equal(remote.read_block(i).codes, local.read_block(i).codes)
    assert remote.manifest["source"]["name"] == "s3://data/tbl"
    # built again from the same objects: reused; a model predicts the remote CSV file
    again = oocboost.build_cache("s3://data/tbl", tmp_path / "remote.oocb", label="y",
                                 block_rows=500, quiet=True)
    assert again.manifest["cache_id"] == remote.manifest["cache_id"]
    model = oocboost.train({"objective": "binary:logistic"}, remote, 5)
    np.testing.assert_allclose(model.predict("s3://data/d.csv"),
                               model.predict(frame[["x", "year", "month"]]), rtol=1e-12)
    r = subprocess.run([sys.executable, "-m", "oocboost", "build-cache", "s3://data/d.csv",
                        "-o", str(tmp_path / "cli.oocb"), "--label", "y", "--quiet"],
                       capture_output=True, text=True, env={**os.environ, **env})
    assert r.returncode == 0, r.stderr
    with pytest.raises(InputError, match=r"s3://data/nothing.csv: not found"):
        open_source("s3://data/nothing.csv")


def test_https_location_through_fsspec(tmp_path):
    """An http(s):// file through fsspec's HTTP filesystem, served by Python's own
    http.server from a folder of this test."""
    _, frame = _parts(seed=2)
    frame.to_csv(tmp_path / "d.csv", index=False)
    pq.write_table(pa.Table.from_pandas(frame), tmp_path / "d.parquet")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                             "127.0.0.1", "--directory", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "http.server did not start"
                time.sleep(0.1)
        base = f"http://127.0.0.1:{port}"
        local = oocboost.build_cache(tmp_path / "d.csv", tmp_path / "l.oocb", label="y",
                                     quiet=True)
        for name in ("d.csv", "d.parquet"):
            remote = oocboost.build_cache(f"{base}/{name}", tmp_path / f"{name}.oocb",
                                          label="y", quiet=True)
            assert remote.feature_names == local.feature_names
            np.testing.assert_array_equal(remote.read_block(0).codes,
                                          local.read_block(0).codes)
        with pytest.raises(InputError, match=rf"{base}/nothing.csv: not found"):
            open_source(f"{base}/nothing.csv")
    finally:
        proc.kill()
        proc.wait()
