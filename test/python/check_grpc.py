"""tritonclient.grpc and tritonclient.grpc.aio against infernode: the calls the client repository's
examples do not make (repository, statistics, trace and log settings, shared-memory status,
classification, typed contents, errors), each with what Triton answers."""
import queue
from functools import partial

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aiogrpcclient
import tritonclient.utils.shared_memory as shm
import checks
from checks import check, expect, expect_error, expect_error_async, main

MODELS = {"simple", "simple_int8", "simple_string", "simple_identity", "simple_sequence",
          "simple_dyna_sequence", "simple_string_dyna_sequence", "repeat_int32"}
A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.ones((1, 16), dtype=np.int32)


def simple_inputs(module=grpcclient, a=A, b=B):
    inputs = [module.InferInput("INPUT0", list(a.shape), "INT32"), module.InferInput("INPUT1", list(b.shape), "INT32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    return inputs


@check
def server_metadata_lists_the_extensions(url):
    md = grpcclient.InferenceServerClient(url).get_server_metadata(as_json=True)
    for ext in ("classification", "sequence", "model_repository", "schedule_policy", "model_configuration",
                "system_shared_memory", "binary_tensor_data", "parameters", "statistics", "trace", "logging"):
        expect(ext in md["extensions"], f"extension {ext} missing from {md['extensions']}")


@check
def model_metadata_and_config(url):
    client = grpcclient.InferenceServerClient(url)
    md = client.get_model_metadata("simple")
    expect(md.name == "simple" and list(md.versions) == ["1"] and md.platform == "onnxruntime_onnx", f"metadata {md}")
    expect([(i.name, i.datatype, list(i.shape)) for i in md.inputs] ==
           [("INPUT0", "INT32", [-1, 16]), ("INPUT1", "INT32", [-1, 16])], f"inputs {md.inputs}")
    config = client.get_model_config("simple").config
    expect(config.max_batch_size == 8 and list(config.input[0].dims) == [16], f"config {config}")
    expect(grpcclient.model_config_pb2.DataType.Name(config.input[0].data_type) == "TYPE_INT32", "input data_type")
    as_json = client.get_model_config("simple", as_json=True)
    expect(as_json["config"]["max_batch_size"] == 8, f"json config {as_json}")


@check
def repository_index_lists_every_model_ready(url):
    index = grpcclient.InferenceServerClient(url).get_model_repository_index().models
    expect({m.name for m in index} == MODELS, f"index names {sorted(m.name for m in index)}")
    expect(all(m.state == "READY" and m.version == "1" for m in index), f"index {index}")


@check
def classification_output(url):
    client = grpcclient.InferenceServerClient(url)
    result = client.infer("simple", simple_inputs(), outputs=[grpcclient.InferRequestedOutput("OUTPUT0", class_count=3)])
    classes = result.as_numpy("OUTPUT0")
    expect(classes.shape == (1, 3), f"shape {classes.shape}")
    top = [c.decode().split(":") for c in classes[0]]
    expect([(float(v), int(i)) for v, i in top] == [(16.0, 15), (15.0, 14), (14.0, 13)], f"classes {classes}")


@check
def request_id_and_parameters(url):
    client = grpcclient.InferenceServerClient(url)
    result = client.infer("simple", simple_inputs(), request_id="grpc-1", parameters={"custom": "value"})
    response = result.get_response()
    expect(response.id == "grpc-1" and response.model_name == "simple" and response.model_version == "1", f"response {response}")
    expect((result.as_numpy("OUTPUT0") == A + B).all(), "OUTPUT0")


@check
def statistics_count_inferences(url):
    client = grpcclient.InferenceServerClient(url)
    before = client.get_inference_statistics("simple").model_stats[0]
    client.infer("simple", simple_inputs())
    stats = client.get_inference_statistics("simple").model_stats[0]
    expect(stats.name == "simple" and stats.version == "1", f"stats {stats}")
    expect(stats.inference_count == before.inference_count + 1, f"inference_count {before.inference_count} -> {stats.inference_count}")
    expect(stats.inference_stats.success.count == before.inference_stats.success.count + 1, "success count")


@check
def unknown_model_and_wrong_shape_errors(url):
    client = grpcclient.InferenceServerClient(url)
    expect_error(lambda: client.infer("nosuch", simple_inputs()), "StatusCode.NOT_FOUND",
                 "Request for unknown model: 'nosuch' is not found")
    expect_error(lambda: client.get_model_metadata("nosuch"), "StatusCode.NOT_FOUND",
                 "Request for unknown model: 'nosuch' is not found")
    short = np.zeros((1, 15), dtype=np.int32)
    expect_error(lambda: client.infer("simple", simple_inputs(grpcclient, short, short)), "StatusCode.INVALID_ARGUMENT",
                 "unexpected shape for input 'INPUT0' for model 'simple'. Expected [-1,16], got [1,15]")
    expect(client.is_model_ready("nosuch") is False, "is_model_ready of an unknown model")


@check
def trace_and_log_settings(url):
    client = grpcclient.InferenceServerClient(url)
    settings = client.get_trace_settings(as_json=True)["settings"]
    for key in ("trace_level", "trace_rate", "trace_count", "log_frequency"):
        expect(key in settings, f"{key} missing from {settings}")
    updated = client.update_trace_settings(model_name="simple", settings={"trace_rate": "7"}, as_json=True)["settings"]
    expect(updated["trace_rate"]["value"] == ["7"], f"model trace_rate {updated}")
    cleared = client.update_trace_settings(model_name="simple", settings={"trace_rate": None}, as_json=True)["settings"]
    expect(cleared["trace_rate"] == settings["trace_rate"], f"cleared {cleared}")
    log = client.get_log_settings(as_json=True)["settings"]
    for key in ("log_info", "log_warning", "log_error", "log_verbose_level", "log_format"):
        expect(key in log, f"{key} missing from {log}")
    updated = client.update_log_settings({"log_verbose_level": 1}, as_json=True)["settings"]
    expect(updated["log_verbose_level"]["uint32_param"] == 1, f"log {updated}")
    client.update_log_settings({"log_verbose_level": log["log_verbose_level"].get("uint32_param", 0)})


@check
def shared_memory_status(url):
    client = grpcclient.InferenceServerClient(url)
    client.unregister_system_shared_memory()
    handle = shm.create_shared_memory_region("check_grpc_region", "/check_grpc_shm", 64)
    try:
        client.register_system_shared_memory("check_grpc_region", "/check_grpc_shm", 64)
        regions = client.get_system_shared_memory_status().regions
        expect(list(regions) == ["check_grpc_region"] and regions["check_grpc_region"].byte_size == 64, f"status {regions}")
        expect_error(lambda: client.register_system_shared_memory("check_grpc_region", "/check_grpc_shm", 64),
                     "StatusCode.ALREADY_EXISTS", "shared memory region 'check_grpc_region' already in manager")
    finally:
        client.unregister_system_shared_memory()
        shm.destroy_shared_memory_region(handle)
    expect(len(client.get_system_shared_memory_status().regions) == 0, "regions left")
    expect(len(client.get_cuda_shared_memory_status().regions) == 0, "cuda regions")


@check
def stream_errors_reach_the_callback(url):
    results = queue.Queue()
    client = grpcclient.InferenceServerClient(url)
    client.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        client.async_stream_infer("nosuch", simple_inputs())
        client.async_stream_infer("simple", simple_inputs(), request_id="after-error")
        first = results.get(timeout=30)
        second = results.get(timeout=30)
    finally:
        client.stop_stream()
    expect(first[0] is None and "Request for unknown model: 'nosuch' is not found" in first[1].message(), f"first {first}")
    expect(second[1] is None and second[0].get_response().id == "after-error", f"second {second}")


@check
async def aio_management_calls(url):
    await checks.aio_management_calls(aiogrpcclient.InferenceServerClient, url)


@check
async def aio_client(url):
    async with aiogrpcclient.InferenceServerClient(url) as client:
        expect(await client.is_server_live() and await client.is_server_ready(), "live/ready")
        expect((await client.get_model_metadata("simple")).name == "simple", "metadata")
        result = await client.infer("simple", simple_inputs(aiogrpcclient))
        expect((result.as_numpy("OUTPUT0") == A + B).all(), "aio OUTPUT0")
        await expect_error_async(client.infer("nosuch", simple_inputs(aiogrpcclient)), "StatusCode.NOT_FOUND",
                                 "Request for unknown model: 'nosuch' is not found")

        async def requests():
            for i in range(3):
                yield {"model_name": "repeat_int32", "inputs": repeat_inputs(i + 1), "request_id": str(i)}

        counts = {}
        async for result, error in client.stream_infer(requests()):
            expect(error is None, f"stream error {error}")
            rid = result.get_response().id
            counts[rid] = counts.get(rid, 0) + 1
        expect(counts == {"0": 1, "1": 2, "2": 3}, f"responses per request {counts}")


def repeat_inputs(n):
    inputs = [aiogrpcclient.InferInput("IN", [n], "INT32"), aiogrpcclient.InferInput("DELAY", [n], "UINT32"),
              aiogrpcclient.InferInput("WAIT", [1], "UINT32")]
    inputs[0].set_data_from_numpy(np.arange(n, dtype=np.int32))
    inputs[1].set_data_from_numpy(np.zeros(n, dtype=np.uint32))
    inputs[2].set_data_from_numpy(np.zeros(1, dtype=np.uint32))
    return inputs


if __name__ == "__main__":
    main()
