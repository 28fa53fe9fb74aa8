# Every shader variant embedded in the library: vkf_shader(NAME SOURCE [-DDEFINE=VALUE ...]).
# Specialization constants (tile sizes, workgroup size, head dim...) are set at
# run time by the op; -D selects what cannot be a constant (storage types, subgroup use).
vkf_shader(add add.comp)
vkf_shader(layernorm_shared_f32 layernorm.comp)
vkf_shader(layernorm_shared_f16 layernorm.comp -DW_F16=1)
vkf_shader(layernorm_subgroup_f32 layernorm.comp -DUSE_SUBGROUP=1)
vkf_shader(layernorm_subgroup_f16 layernorm.comp -DUSE_SUBGROUP=1 -DW_F16=1)
vkf_shader(embedding_f32_f32 embedding.comp)
vkf_shader(embedding_f32_f16 embedding.comp -DP_F16=1)
vkf_shader(embedding_f16_f32 embedding.comp -DT_F16=1)
vkf_shader(embedding_f16_f16 embedding.comp -DT_F16=1 -DP_F16=1)
vkf_shader(topk_shared topk.comp)
vkf_shader(topk_subgroup topk.comp -DUSE_SUBGROUP=1)
