"""The head-class rule: which class a model type is tested with, from name tables only.

The rule (documented in doc/model-factory.md) walks HEAD_RULE in order and takes
the first auto mapping that lists the model type; the head kind names that
mapping. A model type in none of them but in MODEL_MAPPING_NAMES gets its base
model (head kind "base"); a type in no modelling table at all has no head class
(a configuration-only entry, e.g. a sub-model config).

Nothing here imports a modelling module, so the rule is cheap to evaluate for
every registered model type.
"""

from __future__ import annotations

from transformers.models.auto import modeling_auto
from transformers.models.auto.auto_mappings import (
    FEATURE_EXTRACTOR_MAPPING_NAMES,
    IMAGE_PROCESSOR_MAPPING_NAMES,
)
from transformers.models.auto.configuration_auto import (
    CONFIG_MAPPING_NAMES,
    model_type_to_module_name,
)

# (head kind, auto mapping table).
# Order is the preference order. Speech seq2seq, seq2seq LM and masked LM come
# before causal LM: a type listed there as well (whisper, bart, bert) is an
# encoder or encoder-decoder whose causal-LM class is only its decoder half.
HEAD_RULE = (
    ("speech_seq2seq", "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES"),
    ("seq2seq_lm", "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES"),
    ("masked_lm", "MODEL_FOR_MASKED_LM_MAPPING_NAMES"),
    ("causal_lm", "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES"),
    ("image_text_to_text", "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES"),
    ("multimodal_lm", "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES"),
    ("image_classification", "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES"),
    ("ctc", "MODEL_FOR_CTC_MAPPING_NAMES"),
    ("audio_classification", "MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES"),
    ("sequence_classification", "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES"),
    ("zero_shot_image_classification", "MODEL_FOR_ZERO_SHOT_IMAGE_CLASSIFICATION_MAPPING_NAMES"),
    ("semantic_segmentation", "MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES"),
    ("object_detection", "MODEL_FOR_OBJECT_DETECTION_MAPPING_NAMES"),
    ("depth_estimation", "MODEL_FOR_DEPTH_ESTIMATION_MAPPING_NAMES"),
    ("video_classification", "MODEL_FOR_VIDEO_CLASSIFICATION_MAPPING_NAMES"),
    ("token_classification", "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES"),
    ("question_answering", "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES"),
    ("base", "MODEL_MAPPING_NAMES"),
)

# Every other modelling table, for model types with no class in HEAD_RULE.
_OTHER_TABLES = sorted(
    name for name in dir(modeling_auto)
    if name.startswith("MODEL_") and name.endswith("_MAPPING_NAMES")
    and name not in {table for _, table in HEAD_RULE}
)

_MULTIMODAL_TABLES = (
    "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES",
    "MODEL_FOR_ZERO_SHOT_IMAGE_CLASSIFICATION_MAPPING_NAMES",
    "MODEL_FOR_VISUAL_QUESTION_ANSWERING_MAPPING_NAMES",
    "MODEL_FOR_DOCUMENT_QUESTION_ANSWERING_MAPPING_NAMES",
    "MODEL_FOR_ZERO_SHOT_OBJECT_DETECTION_MAPPING_NAMES",
)
_AUDIO_TABLES = (
    "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES", "MODEL_FOR_CTC_MAPPING_NAMES",
    "MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES", "MODEL_FOR_AUDIO_XVECTOR_MAPPING_NAMES",
    "MODEL_FOR_AUDIO_FRAME_CLASSIFICATION_MAPPING_NAMES", "MODEL_FOR_TEXT_TO_WAVEFORM_MAPPING_NAMES",
    "MODEL_FOR_TEXT_TO_SPECTROGRAM_MAPPING_NAMES", "MODEL_FOR_RNNT_MAPPING_NAMES",
    "MODEL_FOR_TDT_MAPPING_NAMES",
)
_VISION_TABLES = (
    "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES", "MODEL_FOR_IMAGE_MAPPING_NAMES",
    "MODEL_FOR_OBJECT_DETECTION_MAPPING_NAMES", "MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES",
    "MODEL_FOR_DEPTH_ESTIMATION_MAPPING_NAMES", "MODEL_FOR_BACKBONE_MAPPING_NAMES",
    "MODEL_FOR_VIDEO_CLASSIFICATION_MAPPING_NAMES", "MODEL_FOR_MASKED_IMAGE_MODELING_MAPPING_NAMES",
    "MODEL_FOR_UNIVERSAL_SEGMENTATION_MAPPING_NAMES", "MODEL_FOR_KEYPOINT_DETECTION_MAPPING_NAMES",
)


def _table(name):
    return getattr(modeling_auto, name)


def _first_name(value):
    """A mapping value may be a tuple of class names; the first is the main one."""
    return value[0] if isinstance(value, (tuple, list)) else value


def head_for(model_type: str) -> tuple[str | None, str | None]:
    """(head_class, head_kind) for a registered model type, or (None, None)."""
    for kind, table in HEAD_RULE:
        names = _table(table)
        if model_type in names:
            return _first_name(names[model_type]), kind
    for table in _OTHER_TABLES:
        names = _table(table)
        if model_type in names:
            kind = table[len("MODEL_FOR_"):-len("_MAPPING_NAMES")].lower()
            return _first_name(names[model_type]), kind
    return None, None


def head_classes(model_type: str) -> list[str]:
    """Every head class the installed transformers registers for `model_type`: each auto
    table's class for it, in the rule's order (HEAD_RULE, then the other tables), once each."""
    names = []
    for table in [t for _, t in HEAD_RULE] + _OTHER_TABLES:
        name = _first_name(_table(table).get(model_type))
        if name and name not in names:
            names.append(name)
    return names


def head_kind_of_class(model_type: str, class_name: str) -> str | None:
    """The head kind under which `class_name` is registered for `model_type`, else None."""
    for kind, table in HEAD_RULE:
        if _first_name(_table(table).get(model_type)) == class_name:
            return kind
    for table in _OTHER_TABLES:
        if _first_name(_table(table).get(model_type)) == class_name:
            return table[len("MODEL_FOR_"):-len("_MAPPING_NAMES")].lower()
    return None


def modality(model_type: str) -> str:
    """"text", "vision", "audio" or "multimodal", from the auto tables' names."""
    def listed(tables):
        return any(model_type in _table(t) for t in tables)

    if listed(_MULTIMODAL_TABLES):
        return "multimodal"
    if listed(_AUDIO_TABLES):
        return "audio"
    if listed(_VISION_TABLES):
        return "vision"
    has_image = model_type in IMAGE_PROCESSOR_MAPPING_NAMES
    has_audio = model_type in FEATURE_EXTRACTOR_MAPPING_NAMES
    if has_image and has_audio:
        return "multimodal"
    if has_image:
        return "vision"
    if has_audio:
        return "audio"
    return "text"


def registered_model_types() -> list[str]:
    """Every model type the installed transformers registers, in registry order."""
    return list(CONFIG_MAPPING_NAMES)


def config_class_name(model_type: str) -> str | None:
    return CONFIG_MAPPING_NAMES[model_type]


def modeling_module_name(model_type: str) -> str:
    """The dotted name of the modelling module of `model_type`."""
    module = model_type_to_module_name(model_type)
    leaf = module.split(".")[-1]
    return f"transformers.models.{module}.modeling_{leaf}"
