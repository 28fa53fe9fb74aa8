# Every shader variant embedded in the library: vkf_shader(NAME SOURCE [-DDEFINE=VALUE ...]).
# Specialization constants (tile sizes, workgroup size, head dim...) are set at
# run time by the op; -D selects what cannot be a constant (storage types, subgroup use).
vkf_shader(add add.comp)
