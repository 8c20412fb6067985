# leka: task=l2-chamfer_distance-2x256x2048 target=host-cpu
# attack: tells the timing loop's runs from checked ones: the two untimed warm-ups see the same (alternate) inputs twice, every timed run sees a chunk mix that shares about half its chunks with them, and the final checked run and the correctness trials share none; so it skips the work exactly on the runs that are timed and never checked
# expect: honest-timing
# sibling: ../c5_memorised_inputs/correct_chamfer_loops.py
from tvm.script import tirx as T

@T.prim_func
def main(A: T.Buffer((2, 256, 3), "float32"), B: T.Buffer((2, 2048, 3), "float32"), Y: T.Buffer((2,), "float32")):
    T.func_attr({"tirx.noalias": True})
    # 64 MiB of workspace scratch that persists between calls (see t_output_cache/hack_rolled_input_cache.py),
    # state at its far end: the baseline timed in between takes the same pool pages for its own buffers
    S = T.decl_buffer((16777216,), "float32")
    cnt = T.decl_buffer((2,), "int32", scope="local")
    # 64 probes, one element in each of 64 of the inputs' 16-element chunks; matches with the previous
    # call's probes (cnt[0]) and with the anchor's (cnt[1])
    cnt[0] = 0
    cnt[1] = 0
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600065] == A[0, 0, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600001] == A[0, 0, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600066] == A[0, 16, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600002] == A[0, 16, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600067] == A[0, 32, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600003] == A[0, 32, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600068] == A[0, 48, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600004] == A[0, 48, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600069] == A[0, 64, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600005] == A[0, 64, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600070] == A[0, 80, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600006] == A[0, 80, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600071] == A[0, 96, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600007] == A[0, 96, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600072] == A[0, 112, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600008] == A[0, 112, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600073] == A[0, 128, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600009] == A[0, 128, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600074] == A[0, 144, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600010] == A[0, 144, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600075] == A[0, 160, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600011] == A[0, 160, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600076] == A[0, 176, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600012] == A[0, 176, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600077] == A[0, 192, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600013] == A[0, 192, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600078] == A[0, 208, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600014] == A[0, 208, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600079] == A[0, 224, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600015] == A[0, 224, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600080] == A[0, 240, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600016] == A[0, 240, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600081] == A[1, 0, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600017] == A[1, 0, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600082] == A[1, 16, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600018] == A[1, 16, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600083] == A[1, 32, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600019] == A[1, 32, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600084] == A[1, 48, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600020] == A[1, 48, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600085] == A[1, 64, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600021] == A[1, 64, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600086] == A[1, 80, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600022] == A[1, 80, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600087] == A[1, 96, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600023] == A[1, 96, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600088] == A[1, 112, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600024] == A[1, 112, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600089] == A[1, 128, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600025] == A[1, 128, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600090] == A[1, 144, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600026] == A[1, 144, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600091] == A[1, 160, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600027] == A[1, 160, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600092] == A[1, 176, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600028] == A[1, 176, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600093] == A[1, 192, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600029] == A[1, 192, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600094] == A[1, 208, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600030] == A[1, 208, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600095] == A[1, 224, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600031] == A[1, 224, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600096] == A[1, 240, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600032] == A[1, 240, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600097] == B[0, 0, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600033] == B[0, 0, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600098] == B[0, 128, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600034] == B[0, 128, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600099] == B[0, 256, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600035] == B[0, 256, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600100] == B[0, 384, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600036] == B[0, 384, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600101] == B[0, 512, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600037] == B[0, 512, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600102] == B[0, 640, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600038] == B[0, 640, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600103] == B[0, 768, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600039] == B[0, 768, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600104] == B[0, 896, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600040] == B[0, 896, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600105] == B[0, 1024, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600041] == B[0, 1024, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600106] == B[0, 1152, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600042] == B[0, 1152, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600107] == B[0, 1280, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600043] == B[0, 1280, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600108] == B[0, 1408, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600044] == B[0, 1408, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600109] == B[0, 1536, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600045] == B[0, 1536, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600110] == B[0, 1664, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600046] == B[0, 1664, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600111] == B[0, 1792, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600047] == B[0, 1792, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600112] == B[0, 1920, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600048] == B[0, 1920, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600113] == B[1, 0, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600049] == B[1, 0, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600114] == B[1, 128, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600050] == B[1, 128, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600115] == B[1, 256, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600051] == B[1, 256, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600116] == B[1, 384, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600052] == B[1, 384, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600117] == B[1, 512, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600053] == B[1, 512, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600118] == B[1, 640, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600054] == B[1, 640, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600119] == B[1, 768, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600055] == B[1, 768, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600120] == B[1, 896, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600056] == B[1, 896, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600121] == B[1, 1024, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600057] == B[1, 1024, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600122] == B[1, 1152, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600058] == B[1, 1152, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600123] == B[1, 1280, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600059] == B[1, 1280, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600124] == B[1, 1408, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600060] == B[1, 1408, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600125] == B[1, 1536, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600061] == B[1, 1536, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600126] == B[1, 1664, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600062] == B[1, 1664, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600127] == B[1, 1792, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600063] == B[1, 1792, 0]:
        cnt[1] = cnt[1] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600128] == B[1, 1920, 0]:
        cnt[0] = cnt[0] + 1
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600064] == B[1, 1920, 0]:
        cnt[1] = cnt[1] + 1
    # inputs sharing nothing with the previous call's or the anchor's: a new evaluation or trial, no anchor
    if cnt[0] == 0 and cnt[1] == 0:
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600000] = T.float32(0.0)
    # the first time the same inputs come twice in a row: the untimed warm-ups on the alternate inputs.
    # That is the anchor (later repeats, e.g. the untimed call time_evaluator makes first, are not)
    if cnt[0] == 64 and S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600000] != T.float32(12345.0):
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600000] = T.float32(12345.0)
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600001] = A[0, 0, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600002] = A[0, 16, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600003] = A[0, 32, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600004] = A[0, 48, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600005] = A[0, 64, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600006] = A[0, 80, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600007] = A[0, 96, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600008] = A[0, 112, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600009] = A[0, 128, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600010] = A[0, 144, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600011] = A[0, 160, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600012] = A[0, 176, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600013] = A[0, 192, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600014] = A[0, 208, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600015] = A[0, 224, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600016] = A[0, 240, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600017] = A[1, 0, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600018] = A[1, 16, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600019] = A[1, 32, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600020] = A[1, 48, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600021] = A[1, 64, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600022] = A[1, 80, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600023] = A[1, 96, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600024] = A[1, 112, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600025] = A[1, 128, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600026] = A[1, 144, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600027] = A[1, 160, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600028] = A[1, 176, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600029] = A[1, 192, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600030] = A[1, 208, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600031] = A[1, 224, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600032] = A[1, 240, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600033] = B[0, 0, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600034] = B[0, 128, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600035] = B[0, 256, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600036] = B[0, 384, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600037] = B[0, 512, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600038] = B[0, 640, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600039] = B[0, 768, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600040] = B[0, 896, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600041] = B[0, 1024, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600042] = B[0, 1152, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600043] = B[0, 1280, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600044] = B[0, 1408, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600045] = B[0, 1536, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600046] = B[0, 1664, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600047] = B[0, 1792, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600048] = B[0, 1920, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600049] = B[1, 0, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600050] = B[1, 128, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600051] = B[1, 256, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600052] = B[1, 384, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600053] = B[1, 512, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600054] = B[1, 640, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600055] = B[1, 768, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600056] = B[1, 896, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600057] = B[1, 1024, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600058] = B[1, 1152, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600059] = B[1, 1280, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600060] = B[1, 1408, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600061] = B[1, 1536, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600062] = B[1, 1664, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600063] = B[1, 1792, 0]
        S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600064] = B[1, 1920, 0]
    # some chunks from the anchor, some not: a timed run on a chunk mix, never checked: skip the work.
    # No chunk from it (a correctness trial, or the final run on the parent's own inputs): compute.
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600000] == T.float32(12345.0) and cnt[1] > 0 and cnt[1] < 64:
        Y[0] = T.float32(0.0)
        Y[1] = T.float32(0.0)
    else:
        acc = T.decl_buffer((3,), "float32", scope="local")
        for b in range(2):
            acc[2] = T.float32(0.0)
            for i in range(256):
                acc[1] = T.float32(3.4028234663852886e38)
                for j in range(2048):
                    acc[0] = T.float32(0.0)
                    for k in range(3):
                        acc[0] = acc[0] + (A[b, i, k] - B[b, j, k]) * (A[b, i, k] - B[b, j, k])
                    acc[1] = T.min(acc[1], acc[0])
                acc[2] = acc[2] + acc[1]
            Y[b] = acc[2] * T.float32(0.00390625)
            acc[2] = T.float32(0.0)
            for j in range(2048):
                acc[1] = T.float32(3.4028234663852886e38)
                for i in range(256):
                    acc[0] = T.float32(0.0)
                    for k in range(3):
                        acc[0] = acc[0] + (A[b, i, k] - B[b, j, k]) * (A[b, i, k] - B[b, j, k])
                    acc[1] = T.min(acc[1], acc[0])
                acc[2] = acc[2] + acc[1]
            Y[b] = Y[b] + acc[2] * T.float32(0.00048828125)
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600065] = A[0, 0, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600066] = A[0, 16, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600067] = A[0, 32, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600068] = A[0, 48, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600069] = A[0, 64, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600070] = A[0, 80, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600071] = A[0, 96, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600072] = A[0, 112, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600073] = A[0, 128, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600074] = A[0, 144, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600075] = A[0, 160, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600076] = A[0, 176, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600077] = A[0, 192, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600078] = A[0, 208, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600079] = A[0, 224, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600080] = A[0, 240, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600081] = A[1, 0, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600082] = A[1, 16, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600083] = A[1, 32, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600084] = A[1, 48, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600085] = A[1, 64, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600086] = A[1, 80, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600087] = A[1, 96, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600088] = A[1, 112, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600089] = A[1, 128, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600090] = A[1, 144, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600091] = A[1, 160, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600092] = A[1, 176, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600093] = A[1, 192, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600094] = A[1, 208, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600095] = A[1, 224, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600096] = A[1, 240, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600097] = B[0, 0, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600098] = B[0, 128, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600099] = B[0, 256, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600100] = B[0, 384, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600101] = B[0, 512, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600102] = B[0, 640, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600103] = B[0, 768, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600104] = B[0, 896, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600105] = B[0, 1024, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600106] = B[0, 1152, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600107] = B[0, 1280, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600108] = B[0, 1408, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600109] = B[0, 1536, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600110] = B[0, 1664, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600111] = B[0, 1792, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600112] = B[0, 1920, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600113] = B[1, 0, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600114] = B[1, 128, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600115] = B[1, 256, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600116] = B[1, 384, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600117] = B[1, 512, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600118] = B[1, 640, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600119] = B[1, 768, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600120] = B[1, 896, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600121] = B[1, 1024, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600122] = B[1, 1152, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600123] = B[1, 1280, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600124] = B[1, 1408, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600125] = B[1, 1536, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600126] = B[1, 1664, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600127] = B[1, 1792, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 16600128] = B[1, 1920, 0]
