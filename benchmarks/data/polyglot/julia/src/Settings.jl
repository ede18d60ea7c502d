"Reads key = value lines of a settings file."
function parse_settings(text::AbstractString)
    result = Dict{String,String}()
    for line in split(text, '\n')
        (isempty(strip(line)) || startswith(line, "#")) && continue
        key, value = split(line, '='; limit=2)
        result[strip(key)] = strip(value)
    end
    result
end
