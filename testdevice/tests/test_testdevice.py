"""The ctest device behaves like an out-of-tree backend: native whitelist,
counted CPU fallback, its own memory statistics, a refusing compile backend."""

import gc

import pytest
import torch
import torch._dynamo

import compatlab_testdevice as ctest

DEV = "ctest"


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64,
                                   torch.bool])
def test_round_trip_keeps_values(dtype):
    x = (torch.randn(4, 5) * 10).to(dtype)
    y = x.to(DEV)
    assert y.device == torch.device("ctest", 0)
    assert y.is_ctest and y.dtype == dtype
    assert torch.equal(y.cpu(), x)
    # non-contiguous source, non-contiguous device view, empty tensor
    assert torch.equal(x.t().to(DEV).cpu(), x.t())
    assert torch.equal(y.t().cpu(), x.t())
    assert torch.equal(y[1:, ::2].cpu(), x[1:, ::2])
    assert torch.ones(0, 3, dtype=dtype).to(DEV).cpu().shape == (0, 3)
    assert ctest.fallback_counts() == {}


def test_copy_into_existing_tensors():
    x = rand(3, 4)
    d = torch.empty(3, 4, device=DEV)
    d.copy_(x)
    back = torch.empty(3, 4)
    back.copy_(d)
    assert torch.equal(back, x)
    d2 = torch.empty(4, device=DEV).fill_(2.5)
    assert torch.equal(d2.cpu(), torch.full((4,), 2.5))
    assert d.sum().item() == pytest.approx(x.sum().item(), rel=1e-5)


def test_whitelisted_ops_run_natively_on_device_memory():
    a, b, bias = rand(8, 16), rand(8, 16), rand(8)
    da, db, dbias = a.to(DEV), b.to(DEV), bias.to(DEV)
    # Device tensors of earlier tests that only a collection frees must go before the
    # baseline, else the gc.collect() below frees them too and the count drops under it
    # (a fresh-clone make test saw 1056 against a baseline of 854496).
    gc.collect()
    before = ctest.memory_allocated()
    ctest.reset_fallback_counts()

    s = da + db
    p = da * db
    m = torch.mm(da, db.t())
    am = torch.addmm(dbias, da, db.t())
    r = torch.relu(da)
    scaled = da + 2.0  # a CPU scalar operand is allowed, as on CUDA

    assert ctest.fallback_counts() == {}
    held = sum(t.numel() * t.element_size() for t in (s, p, m, am, r, scaled))
    assert ctest.memory_allocated() - before == held
    torch.testing.assert_close(s.cpu(), a + b)
    torch.testing.assert_close(p.cpu(), a * b)
    torch.testing.assert_close(m.cpu(), a @ b.t())
    torch.testing.assert_close(am.cpu(), torch.addmm(bias, a, b.t()))
    torch.testing.assert_close(r.cpu(), torch.relu(a))
    torch.testing.assert_close(scaled.cpu(), a + 2.0)
    assert ctest.fallback_counts() == {}  # .cpu() is a copy, whitelisted too

    del s, p, m, am, r, scaled
    gc.collect()
    assert ctest.memory_allocated() == before


def test_mixing_devices_is_refused():
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(3, device=DEV) + torch.ones(3)


def test_other_ops_fall_back_to_cpu_and_are_counted():
    x = rand(4, 6)
    d = x.to(DEV)
    t = torch.tanh(d)
    sm = torch.softmax(d, dim=-1)
    assert t.device.type == DEV and sm.device.type == DEV
    torch.testing.assert_close(t.cpu(), torch.tanh(x))
    torch.testing.assert_close(sm.cpu(), torch.softmax(x, dim=-1))
    counts = ctest.fallback_counts()
    # tanh and softmax are structured: their functional form allocates the output
    # on ctest and calls the .out overload, which is what reaches the fallback.
    assert counts == {"aten::tanh.out": 1, "aten::_softmax.out": 1}
    torch.tanh(d)
    assert ctest.fallback_counts()["aten::tanh.out"] == 2
    ctest.reset_fallback_counts()
    assert ctest.fallback_counts() == {}


def test_in_place_fallback_updates_the_device_tensor():
    x = rand(5)
    d = x.to(DEV)
    d.exp_()
    torch.testing.assert_close(d.cpu(), x.exp())
    assert "aten::exp.out" in ctest.fallback_counts()


def test_registered_kernels_come_from_the_dispatcher():
    kernels = ctest.registered_kernels()
    for name in ("aten::add.Tensor", "aten::mul.Tensor", "aten::mm", "aten::addmm",
                 "aten::relu", "aten::fill_.Scalar", "aten::copy_", "aten::_copy_from",
                 "aten::_copy_from_and_resize", "aten::empty.memory_format",
                 "aten::empty_strided", "aten::view", "aten::as_strided",
                 "aten::_reshape_alias"):
        assert name in kernels
    assert not any(k.startswith("aten::tanh") for k in kernels)
    assert not any(k.startswith("aten::_softmax") for k in kernels)
    for name in kernels:
        assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1")


def test_peak_memory_and_reset():
    ctest.reset_peak_memory_stats()
    base = ctest.memory_allocated()
    assert ctest.max_memory_allocated() == base
    big = torch.empty(1 << 20, dtype=torch.uint8, device=DEV)
    assert ctest.memory_allocated() == base + (1 << 20)
    del big
    assert ctest.memory_allocated() == base
    assert ctest.max_memory_allocated() == base + (1 << 20)
    stats = ctest.memory_stats()
    assert stats["num_allocs"] >= stats["num_frees"] >= 1
    ctest.reset_peak_memory_stats()
    assert ctest.max_memory_allocated() == base
    # the same statistics through the device module, the way torch.cuda's are read
    assert torch.ctest.max_memory_allocated() == base
    torch.ctest.synchronize()


def test_structural_ops_need_no_fallback():
    """Every op the compile backend accepts beyond the device's own kernels has a
    CompositeExplicitAutograd kernel, and runs on ctest without the fallback."""
    x = rand(2, 3, 4)
    d = x.to(DEV)
    calls = {
        "aten::_to_copy": lambda t: t.to(torch.float64),
        "aten::_unsafe_view": lambda t: torch.ops.aten._unsafe_view(t, [6, 4]),
        "aten::alias": lambda t: torch.ops.aten.alias(t),
        "aten::clone": lambda t: t.clone(),
        "aten::detach": lambda t: t.detach(),
        "aten::empty_like": lambda t: torch.empty_like(t).zero_(),
        "aten::expand": lambda t: t[:, :1].expand(2, 5, 4),
        "aten::permute": lambda t: t.permute(2, 0, 1),
        "aten::select.int": lambda t: t.select(1, 2),
        "aten::slice.Tensor": lambda t: t[:, 1:3],
        "aten::squeeze.dim": lambda t: t[:1].squeeze(0),
        "aten::squeeze.dims": lambda t: torch.ops.aten.squeeze.dims(t[:1], [0]),
        "aten::t": lambda t: t[0].t(),
        "aten::transpose.int": lambda t: t.transpose(0, 2),
        "aten::unsqueeze": lambda t: t.unsqueeze(1),
    }
    assert set(calls) == ctest.STRUCTURAL_OPS
    for name, call in calls.items():
        assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeExplicitAutograd")
        assert name not in ctest.registered_kernels()
        ctest.reset_fallback_counts()
        out = call(d)
        assert out.device.type == DEV
        torch.testing.assert_close(out.cpu(), call(x).to(out.dtype), msg=name)
        assert ctest.fallback_counts() == {}, name


def test_views_alias_device_memory():
    d = torch.zeros(2, 3, device=DEV)
    d.view(6)[4] = 7.0
    d.t()[0].fill_(1.0)
    expected = torch.zeros(2, 3)
    expected.view(6)[4] = 7.0
    expected.t()[0].fill_(1.0)
    assert torch.equal(d.cpu(), expected)


def test_compile_of_whitelisted_ops_matches_eager():
    torch._dynamo.reset()

    def fn(x, w, b):
        return torch.relu(torch.addmm(b, x, w.t()) * 2.0 + x.mm(w.t()))

    x, w, b = rand(4, 8).to(DEV), rand(5, 8).to(DEV), rand(5).to(DEV)
    compiled = torch.compile(fn, backend="ctest")
    ctest.reset_fallback_counts()
    got = compiled(x, w, b)
    assert got.device.type == DEV
    torch.testing.assert_close(got.cpu(), fn(x, w, b).cpu())
    assert ctest.fallback_counts() == {}


def test_compile_refuses_ops_outside_the_whitelist():
    torch._dynamo.reset()

    def fn(x):
        return torch.tanh(x) + 1.0

    with pytest.raises(Exception) as info:
        torch.compile(fn, backend="ctest")(rand(3).to(DEV))
    assert isinstance(info.value, torch._dynamo.exc.BackendCompilerFailed)
    assert "aten::tanh" in str(info.value)
    assert "UnsupportedOpError" in str(info.value)


def test_compile_refuses_a_backward_it_cannot_run():
    torch._dynamo.reset()
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).to(DEV)
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed, match="threshold_backward"):
        torch.compile(model, backend="ctest")(rand(2, 4).to(DEV))


def test_linear_relu_model_forward_and_eager_backward():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 4))
    x = rand(8, 16)
    expected = model(x)
    dev_model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 4))
    dev_model.load_state_dict(model.state_dict())
    dev_model.to(DEV)
    ctest.reset_fallback_counts()
    with torch.no_grad():
        got = dev_model(x.to(DEV))
    assert got.device.type == DEV
    torch.testing.assert_close(got.cpu(), expected.detach())
    assert ctest.fallback_counts() == {}  # linear = t + addmm, both on ctest

    # backward runs too, partly through the fallback (threshold_backward, sum)
    dev_model(x.to(DEV)).sum().backward()
    expected.sum().backward()
    torch.testing.assert_close(dev_model[0].weight.grad.cpu(), model[0].weight.grad)
    assert dev_model[0].weight.grad.device.type == DEV
    assert "aten::threshold_backward.grad_input" in ctest.fallback_counts()
