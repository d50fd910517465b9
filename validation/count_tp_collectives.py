"""Count the collectives a tensor-parallel (+ sequence-parallel) block runs when each column-parallel projection
gathers its own input, as KempnerForge's plan does (kempnerforge/distributed/tensor_parallel.py
_build_block_tp_plan @5666d0d: ColwiseParallel(input_layouts=Shard(1)) on each of q, k, v, gate and up), against
a plan that gathers once per module. Two CPU ranks over gloo (no GPU needed); each graph's all-gathers and
reduce-scatters are counted where Inductor sees them (its post-grad pass) and, for eager, after AOTAutograd's
default partition, with the aten.cat nodes beside them (a batch-first Shard(1) tensor is reordered around each
collective: planner.engine.train_layout.sp_rearranging_copies). An analysis script, not part of the planner: its
output and what it shows are in validation/REPORT.md (planner.engine.train_layout.tp_calls_per_allreduce uses the
counts).

Run: python3 -m torch.distributed.run --nproc_per_node=2 validation/count_tp_collectives.py {inductor,eager}
"""

import sys

import torch
import torch._inductor.config as inductor_config
import torch.distributed as dist
import torch.nn as nn
from torch._functorch.aot_autograd import aot_module_simplified
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel, parallelize_module

KINDS = ("all_gather", "reduce_scatter", "all_reduce", "aten.cat")


class Block(nn.Module):
    """A Llama-shaped block at toy widths: norms, q/k/v (a stand-in for attention), o, gate/up/down."""

    def __init__(self, d: int = 64, f: int = 128):
        super().__init__()
        self.attention_norm, self.mlp_norm = nn.RMSNorm(d), nn.RMSNorm(d)
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.gate_proj, self.up_proj = nn.Linear(d, f, bias=False), nn.Linear(d, f, bias=False)
        self.down_proj = nn.Linear(f, d, bias=False)

    def forward(self, x):
        h = self.attention_norm(x)
        x = x + self.o_proj(self.q_proj(h) * torch.sigmoid(self.k_proj(h)) + self.v_proj(h))
        h = self.mlp_norm(x)
        return x + self.down_proj(nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))


def counts_of(graph) -> dict:
    ops = [str(n.target) for n in graph.nodes if n.op == "call_function"]
    return {k: sum(1 for o in ops if k in o) for k in KINDS}


def main(mode: str) -> None:
    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (2,), mesh_dim_names=("tp",))
    torch.manual_seed(0)
    block = Block()
    col = {"input_layouts": Shard(1), "use_local_output": False}
    row = {"output_layouts": Shard(1), "use_local_output": False}
    parallelize_module(block, mesh, {
        "attention_norm": SequenceParallel(), "mlp_norm": SequenceParallel(),
        "q_proj": ColwiseParallel(**col), "k_proj": ColwiseParallel(**col), "v_proj": ColwiseParallel(**col),
        "o_proj": RowwiseParallel(**row), "gate_proj": ColwiseParallel(**col), "up_proj": ColwiseParallel(**col),
        "down_proj": RowwiseParallel(**row)})
    graphs = []
    if mode == "inductor":
        inductor_config.post_grad_custom_post_pass = lambda g: graphs.append(counts_of(g))
        fn = torch.compile(block)
    else:
        def backend(gm, inputs):
            def keep(g, _):
                graphs.append(counts_of(g.graph))
                return g
            return aot_module_simplified(gm, inputs, fw_compiler=keep, bw_compiler=keep)
        fn = torch.compile(block, backend=backend)
    x = DTensor.from_local(torch.randn(2, 8, 64), mesh, [Shard(1)])
    fn(x).to_local().sum().backward()
    if dist.get_rank() == 0:
        print(torch.__version__, mode, "forward", graphs[0], "backward", graphs[1])
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "inductor")
