// CompressedMatMul: an OpenVINO op for x [..., K] f32 times an INT8_SYM weight matrix [N, K], scaled
// per output channel: out [..., N] f32. It stands for the subgraph nncf writes (Constant i8 -> Convert
// -> Multiply(scale) -> MatMul(transpose_b)), which runtime/native.py replaces with it at load.
#pragma once

#include <openvino/op/op.hpp>

namespace qwen3tts::native {

class CompressedMatMul : public ov::op::Op {
public:
    OPENVINO_OP("CompressedMatMul", "qwen3tts_native");

    CompressedMatMul() = default;
    // x: [..., K] f32; weights: [N, K] i8; scale: [N] f32
    CompressedMatMul(const ov::Output<ov::Node>& x, const ov::Output<ov::Node>& weights,
                     const ov::Output<ov::Node>& scale);

    void validate_and_infer_types() override;
    std::shared_ptr<ov::Node> clone_with_new_inputs(const ov::OutputVector& new_args) const override;
    bool visit_attributes(ov::AttributeVisitor& visitor) override;
    bool has_evaluate() const override;
    bool evaluate(ov::TensorVector& outputs, const ov::TensorVector& inputs) const override;
};

}  // namespace qwen3tts::native
