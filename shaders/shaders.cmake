# Every shader variant embedded in the library: vkf_shader(NAME SOURCE [-DDEFINE=VALUE ...]).
# Specialization constants (tile sizes, workgroup size, head dim...) are set at
# run time by the op; -D selects what cannot be a constant (storage types, subgroup use).
vkf_shader(add add.comp)
vkf_shader(attention_scores_f32 attention_scores.comp)
vkf_shader(attention_scores_f16 attention_scores.comp -DW_F16=1)
vkf_shader(masked_softmax_subgroup masked_softmax.comp -DUSE_SUBGROUP=1)
vkf_shader(masked_softmax_shared masked_softmax.comp -DUSE_SUBGROUP=0)
vkf_shader(attention_values_f32 attention_values.comp)
vkf_shader(attention_values_f16 attention_values.comp -DW_F16=1)
vkf_shader(flash_attention_f32 flash_attention.comp)
vkf_shader(flash_attention_f16 flash_attention.comp -DW_F16=1)
