# Every shader variant embedded in the library: vkf_shader(NAME SOURCE [-DDEFINE=VALUE ...]).
# Specialization constants (tile sizes, workgroup size, head dim...) are set at
# run time by the op; -D selects what cannot be a constant (storage types, subgroup use).
vkf_shader(add add.comp)
vkf_shader(gemm_tiled_f32 gemm_tiled.comp)
vkf_shader(gemm_tiled_f16 gemm_tiled.comp -DW_F16=1)
vkf_shader(gemm_vec_subgroup_f32 gemm_vec.comp -DUSE_SUBGROUP=1)
vkf_shader(gemm_vec_subgroup_f16 gemm_vec.comp -DUSE_SUBGROUP=1 -DW_F16=1)
vkf_shader(gemm_vec_shared_f32 gemm_vec.comp -DUSE_SUBGROUP=0)
vkf_shader(gemm_vec_shared_f16 gemm_vec.comp -DUSE_SUBGROUP=0 -DW_F16=1)
