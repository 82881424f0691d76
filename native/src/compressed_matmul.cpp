#include "compressed_matmul.hpp"

#include "dispatch.hpp"

namespace qwen3tts::native {

CompressedMatMul::CompressedMatMul(const ov::Output<ov::Node>& x, const ov::Output<ov::Node>& weights,
                                   const ov::Output<ov::Node>& scale)
    : Op({x, weights, scale}) {
    constructor_validate_and_infer_types();
}

void CompressedMatMul::validate_and_infer_types() {
    NODE_VALIDATION_CHECK(this, get_input_element_type(0) == ov::element::f32, "x must be f32");
    NODE_VALIDATION_CHECK(this, get_input_element_type(1) == ov::element::i8, "weights must be i8");
    NODE_VALIDATION_CHECK(this, get_input_element_type(2) == ov::element::f32, "scale must be f32");
    const ov::PartialShape& x = get_input_partial_shape(0);
    const ov::PartialShape& w = get_input_partial_shape(1);
    const ov::PartialShape& s = get_input_partial_shape(2);
    NODE_VALIDATION_CHECK(this, w.rank().is_static() && w.rank().get_length() == 2 && w.is_static(),
                          "weights must be a static [N, K] matrix");
    NODE_VALIDATION_CHECK(this, s.rank().is_static() && s.rank().get_length() == 1 && s[0].compatible(w[0]),
                          "scale must be [N]");
    NODE_VALIDATION_CHECK(this, x.rank().is_dynamic() || x.rank().get_length() >= 1, "x needs a channel axis");
    ov::PartialShape out = x;
    if (x.rank().is_static()) {
        const int64_t last = x.rank().get_length() - 1;
        NODE_VALIDATION_CHECK(this, x[last].compatible(w[1]), "x's last axis must be K = ", w[1]);
        out[last] = w[0];
    }
    set_output_type(0, ov::element::f32, out);
}

std::shared_ptr<ov::Node> CompressedMatMul::clone_with_new_inputs(const ov::OutputVector& new_args) const {
    check_new_args_count(this, new_args);
    return std::make_shared<CompressedMatMul>(new_args.at(0), new_args.at(1), new_args.at(2));
}

bool CompressedMatMul::visit_attributes(ov::AttributeVisitor&) { return true; }

bool CompressedMatMul::has_evaluate() const { return true; }

bool CompressedMatMul::evaluate(ov::TensorVector& outputs, const ov::TensorVector& inputs) const {
    const ov::Tensor& x = inputs[0];
    const ov::Tensor& weights = inputs[1];
    const ov::Tensor& scale = inputs[2];
    const ov::Shape& w_shape = weights.get_shape();
    const Int8Matrix w{weights.data<const int8_t>(), scale.data<const float>(), static_cast<int64_t>(w_shape[0]),
                       static_cast<int64_t>(w_shape[1])};
    ov::Shape out_shape = x.get_shape();
    out_shape.back() = w_shape[0];
    outputs[0].set_shape(out_shape);
    const int64_t m = w.cols == 0 ? 0 : static_cast<int64_t>(x.get_size()) / w.cols;
    matmul(active_kernels(), x.data<const float>(), m, w, outputs[0].data<float>());
    return true;
}

}  // namespace qwen3tts::native
