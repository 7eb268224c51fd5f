classdef Store < handle
    properties
        Items
        Capacity
    end
    methods
        function obj = Store(capacity)
            obj.Items = containers.Map();
            obj.Capacity = capacity;
        end
        function ok = add(obj, name, count)
            ok = obj.Items.Count < obj.Capacity;
            if ok
                obj.Items(name) = count;
            end
        end
    end
end

%% Section one
x = 1;
y = 2;
z = x + y;
disp(z);

%%% Octave section
a = [1 2 3];
b = a * 2;
c = sum(b);
disp(c);

## Another
function r = twice(v)
    r = 2 * v;
    disp(r);
end
