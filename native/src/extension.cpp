// The library's entry point for ov::Core::add_extension / NodeFactory.add_extension.
#include <openvino/core/extension.hpp>
#include <openvino/core/op_extension.hpp>

#include "compressed_matmul.hpp"

OPENVINO_CREATE_EXTENSIONS(std::vector<ov::Extension::Ptr>({
    std::make_shared<ov::OpExtension<qwen3tts::native::CompressedMatMul>>(),
}));
