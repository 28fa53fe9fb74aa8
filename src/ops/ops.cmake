# One line per op: its name and its shader variants (name, source, defines).
# Specialization constants (tile sizes, workgroup size, head dim...) are set at
# run time by the op; -D selects what cannot be a constant (storage types,
# subgroup use). Order: how `vkformer bench ops` lists them.
vkf_add_op(gemm SHADER gemm_tiled_f32 gemm_tiled.comp SHADER gemm_tiled_f16 gemm_tiled.comp -DW_F16=1 SHADER gemm_texel_f32 gemm_tiled.comp -DTEXEL=1 SHADER gemm_texel_f16 gemm_tiled.comp -DTEXEL=1 -DW_F16=1 SHADER gemm_broadcast_f32 gemm_tiled.comp -DTEXEL=1 -DBCAST=1 SHADER gemm_broadcast_f16 gemm_tiled.comp -DTEXEL=1 -DBCAST=1 -DW_F16=1 SHADER gemm_vec_subgroup_f32 gemm_vec.comp -DUSE_SUBGROUP=1 SHADER gemm_vec_subgroup_f16 gemm_vec.comp -DUSE_SUBGROUP=1 -DW_F16=1 SHADER gemm_vec_shared_f32 gemm_vec.comp -DUSE_SUBGROUP=0 SHADER gemm_vec_shared_f16 gemm_vec.comp -DUSE_SUBGROUP=0 -DW_F16=1 SHADER gemm_vec_subgroup_texel_f32 gemm_vec.comp -DUSE_SUBGROUP=1 -DTEXEL=1 SHADER gemm_vec_subgroup_texel_f16 gemm_vec.comp -DUSE_SUBGROUP=1 -DTEXEL=1 -DW_F16=1 SHADER gemm_vec_shared_texel_f32 gemm_vec.comp -DUSE_SUBGROUP=0 -DTEXEL=1 SHADER gemm_vec_shared_texel_f16 gemm_vec.comp -DUSE_SUBGROUP=0 -DTEXEL=1 -DW_F16=1)
vkf_add_op(attention_scores SHADER attention_scores_f32 attention_scores.comp SHADER attention_scores_f16 attention_scores.comp -DW_F16=1)
vkf_add_op(masked_softmax SHADER masked_softmax_subgroup masked_softmax.comp -DUSE_SUBGROUP=1 SHADER masked_softmax_shared masked_softmax.comp -DUSE_SUBGROUP=0)
vkf_add_op(attention_values SHADER attention_values_f32 attention_values.comp SHADER attention_values_f16 attention_values.comp -DW_F16=1)
vkf_add_op(flash_attention SHADER flash_attention_f32 flash_attention.comp SHADER flash_attention_f16 flash_attention.comp -DW_F16=1 SHADER flash_attention_texel_f32 flash_attention.comp -DTEXEL=1 SHADER flash_attention_texel_f16 flash_attention.comp -DTEXEL=1 -DW_F16=1)
vkf_add_op(attention)
vkf_add_op(layernorm SHADER layernorm_shared_f32 layernorm.comp SHADER layernorm_shared_f16 layernorm.comp -DW_F16=1 SHADER layernorm_subgroup_f32 layernorm.comp -DUSE_SUBGROUP=1 SHADER layernorm_subgroup_f16 layernorm.comp -DUSE_SUBGROUP=1 -DW_F16=1)
vkf_add_op(rmsnorm SHADER rmsnorm_shared_f32 rmsnorm.comp SHADER rmsnorm_shared_f16 rmsnorm.comp -DW_F16=1 SHADER rmsnorm_subgroup_f32 rmsnorm.comp -DUSE_SUBGROUP=1 SHADER rmsnorm_subgroup_f16 rmsnorm.comp -DUSE_SUBGROUP=1 -DW_F16=1)
vkf_add_op(embedding SHADER embedding_f32_f32 embedding.comp SHADER embedding_f32_f16 embedding.comp -DP_F16=1 SHADER embedding_f16_f32 embedding.comp -DT_F16=1 SHADER embedding_f16_f16 embedding.comp -DT_F16=1 -DP_F16=1)
vkf_add_op(add SHADER add add.comp)
vkf_add_op(mul SHADER mul mul.comp)
vkf_add_op(position_bias SHADER position_bias_f32 position_bias.comp SHADER position_bias_f16 position_bias.comp -DW_F16=1)
vkf_add_op(topk SHADER topk_shared topk.comp SHADER topk_subgroup topk.comp -DUSE_SUBGROUP=1)
vkf_add_op(copy_rows SHADER copy_rows copy_rows.comp)
vkf_add_op(mean_pool SHADER mean_pool mean_pool.comp)
vkf_add_op(l2_normalize SHADER l2_normalize_shared l2_normalize.comp -DUSE_SUBGROUP=0 SHADER l2_normalize_subgroup l2_normalize.comp -DUSE_SUBGROUP=1)
vkf_add_op(peak_fma SHADER peak_fma peak_fma.comp)
vkf_add_op(peak_bandwidth SHADER peak_bandwidth peak_bandwidth.comp)
