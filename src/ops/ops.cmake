# One line per op: its name and its shader variants (name, source, defines).
# Specialization constants (tile sizes, workgroup size, head dim...) are set at
# run time by the op; -D selects what cannot be a constant (storage types,
# subgroup use). WEIGHTS builds each variant per storage format of the weights
# (or K/V), VARIANT_f32, VARIANT_f16, and for gemm the block formats
# VARIANT_q8_0 ... (cmake/ops.cmake; the texel ones, PLAIN, only f32 and f16).
# embedding's block tables (WQ=n, shaders/lib/quant.glsl) with f32 or f16 positions. Order: how
# `vkformer bench ops` lists them.
vkf_add_op(gemm WEIGHTS f32 f16 q8_0 q4_0 q4_1 q4_k q6_k SHADER gemm_tiled gemm_tiled.comp SHADER gemm_texel gemm_tiled.comp -DTEXEL=1 SHADER gemm_broadcast gemm_tiled.comp -DTEXEL=1 -DBCAST=1 PLAIN SHADER gemm_vec_subgroup gemm_vec.comp -DUSE_SUBGROUP=1 SHADER gemm_vec_shared gemm_vec.comp -DUSE_SUBGROUP=0 SHADER gemm_vec_subgroup_texel gemm_vec.comp -DUSE_SUBGROUP=1 -DTEXEL=1 SHADER gemm_vec_shared_texel gemm_vec.comp -DUSE_SUBGROUP=0 -DTEXEL=1 SHADER gemm_coopmat gemm_coopmat.comp SHADER gemm_coopmat_emulated gemm_coopmat.comp -DEMULATE_COOPMAT=1 SHADER gemm_splitk_reduce gemm_splitk_reduce.comp)
vkf_add_op(attention_scores WEIGHTS f32 f16 SHADER attention_scores attention_scores.comp)
vkf_add_op(masked_softmax SHADER masked_softmax_subgroup masked_softmax.comp -DUSE_SUBGROUP=1 SHADER masked_softmax_shared masked_softmax.comp -DUSE_SUBGROUP=0)
vkf_add_op(attention_values WEIGHTS f32 f16 SHADER attention_values attention_values.comp)
vkf_add_op(flash_attention WEIGHTS f32 f16 SHADER flash_attention flash_attention.comp SHADER flash_attention_coopmat flash_attention_coopmat.comp SHADER flash_attention_coopmat_emulated flash_attention_coopmat.comp -DEMULATE_COOPMAT=1 SHADER flash_attention_texel flash_attention.comp -DTEXEL=1 SHADER flash_attention_split flash_attention.comp -DSPLIT=1 SHADER flash_attention_combine flash_attention_combine.comp PLAIN)
vkf_add_op(attention)
vkf_add_op(layernorm WEIGHTS f32 f16 SHADER layernorm_shared layernorm.comp SHADER layernorm_subgroup layernorm.comp -DUSE_SUBGROUP=1)
vkf_add_op(rmsnorm WEIGHTS f32 f16 SHADER rmsnorm_shared rmsnorm.comp SHADER rmsnorm_subgroup rmsnorm.comp -DUSE_SUBGROUP=1)
vkf_add_op(embedding SHADER embedding_f32_f32 embedding.comp SHADER embedding_f32_f16 embedding.comp -DP_F16=1 SHADER embedding_f16_f32 embedding.comp -DT_F16=1 SHADER embedding_f16_f16 embedding.comp -DT_F16=1 -DP_F16=1 SHADER embedding_q8_0_f32 embedding.comp -DWQ=1 SHADER embedding_q8_0_f16 embedding.comp -DWQ=1 -DP_F16=1 SHADER embedding_q4_0_f32 embedding.comp -DWQ=2 SHADER embedding_q4_0_f16 embedding.comp -DWQ=2 -DP_F16=1 SHADER embedding_q4_1_f32 embedding.comp -DWQ=3 SHADER embedding_q4_1_f16 embedding.comp -DWQ=3 -DP_F16=1 SHADER embedding_q4_k_f32 embedding.comp -DWQ=4 SHADER embedding_q4_k_f16 embedding.comp -DWQ=4 -DP_F16=1 SHADER embedding_q6_k_f32 embedding.comp -DWQ=5 SHADER embedding_q6_k_f16 embedding.comp -DWQ=5 -DP_F16=1)
vkf_add_op(rope SHADER rope rope.comp)
vkf_add_op(add SHADER add add.comp)
vkf_add_op(mul SHADER mul mul.comp)
vkf_add_op(position_bias WEIGHTS f32 f16 SHADER position_bias position_bias.comp)
vkf_add_op(topk SHADER topk_shared topk.comp SHADER topk_subgroup topk.comp -DUSE_SUBGROUP=1)
vkf_add_op(copy_rows SHADER copy_rows_f32_f32 copy_rows.comp SHADER copy_rows_f32_f16 copy_rows.comp -DD_F16=1 SHADER copy_rows_f16_f16 copy_rows.comp -DS_F16=1 -DD_F16=1 SHADER copy_rows_f16_f32 copy_rows.comp -DS_F16=1)
vkf_add_op(mean_pool SHADER mean_pool mean_pool.comp)
vkf_add_op(l2_normalize SHADER l2_normalize_shared l2_normalize.comp -DUSE_SUBGROUP=0 SHADER l2_normalize_subgroup l2_normalize.comp -DUSE_SUBGROUP=1)
vkf_add_op(peak_fma SHADER peak_fma peak_fma.comp)
vkf_add_op(peak_bandwidth SHADER peak_bandwidth peak_bandwidth.comp SHADER peak_bandwidth_texel peak_bandwidth.comp -DTEXEL=1)
